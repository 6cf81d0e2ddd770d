"""End to end: the real loader, models, regimes and loop on tiny generated data; results.json."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import CONF, ROOT, TINY_ARCH, make_cfg, write_tiny_data
from gatelab.core.config import ConfigError
from gatelab.core.validation import validate
from gatelab.data.datasets import DataNotFoundError
from gatelab.training.loop import train

REGIMES = ["relu", "frnpf_ii", "frnpf_di", "dlnpf", "flnpf"]
GROUPS = {g: sorted(p.stem for p in (CONF / g).glob("*.yaml")) for g in ("dataset", "arch", "regime", "optimizer")}
# Paper 003's routing nets go with their own tasks and linear/leaky regimes (tests/test_routing.py).
ROUTING_PARTS = {"dataset": "dataset=routing_mnist_perm", "arch": "arch=routing", "regime": "regime=dln"}
DGN_DATASETS = [d for d in GROUPS["dataset"] if not d.startswith("routing_")]
DGN_ARCHS = [a for a in GROUPS["arch"] if a != "routing"]


def check_results(run_dir: Path, epochs: int) -> dict:
    res = json.loads((run_dir / "results.json").read_text())
    assert res["status"] == "completed"
    assert [h["epoch"] for h in res["history"]] == list(range(1, epochs + 1))
    for h in res["history"]:
        assert 0 <= h["train_acc"] <= 1 and 0 <= h["test_acc"] <= 1 and h["seconds"] >= 0
        assert h["train_loss"] >= 0 and h["test_loss"] >= 0
    best = max(h["test_acc"] for h in res["history"])
    assert res["best_test_acc"] == best
    assert res["history"][res["best_epoch"] - 1]["test_acc"] == best
    assert res["final_train_acc"] == res["history"][-1]["train_acc"]
    assert res["wall_time_s"] > 0 and res["env"]["torch"] == torch.__version__
    assert {"dataset", "arch", "regime", "optimizer", "seed"} <= set(res["config"])
    assert (run_dir / "ckpt" / "best.pt").is_file() and (run_dir / "ckpt" / "last.pt").is_file()
    return res


@pytest.mark.parametrize("dataset", DGN_DATASETS)
@pytest.mark.parametrize("arch", DGN_ARCHS)
def test_every_regime_runs_end_to_end(tiny_root, tmp_path, dataset, arch):
    """ReLU first, then FLNPF from its checkpoint, as a sweep would."""
    for regime in REGIMES:
        run = tmp_path / regime
        over = [f"dataset={dataset}", f"arch={arch}", *TINY_ARCH[arch], f"regime={regime}", "epochs=2", "seed=1"]
        if regime == "flnpf":
            over.append(f"regime.source={tmp_path / 'relu'}")
        res = check_results(run, 2) if train(make_cfg(over, tiny_root, run), run) else None
        assert res["config"]["regime"]["name"] == regime and res["seed"] == 1
        if regime == "flnpf":
            assert res["model"]["source_checkpoint"] == str(tmp_path / "relu" / "ckpt" / "best.pt")
        if dataset == "binary_mnist":
            assert res["config"]["dataset"]["task"] == "binary"


def test_training_learns_the_tiny_task(cfg_factory, tmp_path):
    cfg = cfg_factory("epochs=15", "optimizer.lr=3e-3")
    res = train(cfg, tmp_path / "run")
    assert res["best_test_acc"] > 0.6, res["history"]  # 10 classes: chance is 0.1
    assert res["history"][-1]["train_loss"] < res["history"][0]["train_loss"]


def test_checkpoint_epochs_and_best_checkpoint(cfg_factory, tmp_path):
    from gatelab.core import checkpoints
    res = train(cfg_factory("epochs=3", "checkpoint_epochs=[0,1,3]"), tmp_path / "run")
    ck = tmp_path / "run" / "ckpt"
    assert sorted(p.name for p in ck.iterdir()) == ["best.pt", "epoch_0.pt", "epoch_1.pt", "epoch_3.pt", "last.pt"]  # prev.pt freed
    assert checkpoints.load(ck / "epoch_0.pt")["epoch"] == 0
    assert checkpoints.load(ck / "best.pt")["epoch"] == res["best_epoch"]
    assert checkpoints.load(ck / "epoch_1.pt")["epoch"] == 1


def test_divergence_is_recorded_and_not_a_result(cfg_factory, tmp_path):
    res = train(cfg_factory("optimizer=sgd", "optimizer.lr=1e30", "epochs=3"), tmp_path / "run")
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["status"] == saved["status"] == "diverged"
    assert saved["diverged_epoch"] == 1 and saved["best_test_acc"] is None
    assert saved["history"][-1]["train_loss"] is None


def test_missing_data_is_a_clear_error_recorded_as_failed(tmp_path, monkeypatch):
    import gatelab.data.datasets as data_mod

    def offline(source, path):
        raise OSError("no network")
    monkeypatch.setattr(data_mod, "_download", offline)
    empty = tmp_path / "empty"
    cfg = make_cfg(["dataset=cifar10"], empty, tmp_path / "run")
    with pytest.raises(DataNotFoundError, match=r"cifar10\.npz not found.*no network.*data\.root.*GATELAB_DATA"):
        train(cfg, tmp_path / "run")
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["status"] == "failed" and "cifar10.npz" in saved["error"]


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_config_option_composes_and_validates(group, tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "best.pt").touch()  # FLNPF's source must exist to validate
    (tmp_path / "ckpt" / "last.pt").touch()
    assert len(GROUPS[group]) >= 3
    for option in GROUPS[group]:
        over = [f"{group}={option}"]
        if group == "regime" and option in ("flnpf", "learned_gates"):
            over.append(f"regime.source={tmp_path}")
        if option.startswith("routing") or option == "leaky":  # a routing net: its task, arch and regime
            over = [*(v for g, v in ROUTING_PARTS.items() if g != group), *over]
        cfg = make_cfg(over)
        assert cfg[group].name == option
        validate(cfg)


@pytest.mark.parametrize("overrides,match", [
    (["regime=flnpf", "regime.source=null"], "regime.source"),
    (["regime=relu", "regime.source=/x"], "only used by"),
    (["optimizer.lr=0"], "optimizer.lr"),
    (["epochs=0"], "epochs"),
    (["regime=dlnpf", "regime.beta=0"], "beta"),
    (["regime=dlnpf", "regime.gate=hard"], "no gradient"),
    (["arch=fc", "arch.pool=gap"], "needs arch.conv_channels"),
    (["regime=relu", "regime.feature_init=copy_value"], "tied"),
])
def test_bad_values_are_rejected_before_training(overrides, match):
    with pytest.raises(ConfigError, match=match):
        validate(make_cfg(overrides))


@pytest.mark.parametrize("override,key", [
    ("regime.gate=sometimes", "regime.gate"), ("arch.pool=max", "arch.pool"), ("optimizer.name=adamw", "optimizer.name"),
    ("regime.feature_init=copy", "regime.feature_init"), ("regime.feature_act=tanh", "regime.feature_act"),
    ("logger.name=tensorboard", "logger.name"), ("dataset.task=regression", "dataset.task"), ("arch.init=he", "arch.init"),
])
def test_a_typo_in_a_closed_set_fails_at_composition_naming_the_key(override, key):
    from hydra.errors import ConfigCompositionException
    with pytest.raises(ConfigCompositionException) as err:
        make_cfg([override])
    message = str(err.value) + str(err.value.__cause__)
    assert key in message and "expected one of" in message


def test_closed_sets_are_stored_as_the_same_plain_strings(tiny_root, tmp_path):
    """Enums in the schema, plain strings in results.json and checkpoints (as before the enums)."""
    from gatelab.core import checkpoints
    cfg = make_cfg(["regime=dlnpf", "arch.dense=[8]", "optimizer=sgd", "optimizer.lr=0.01"], tiny_root)
    res = train(cfg, tmp_path / "run")
    stored = json.loads((tmp_path / "run" / "results.json").read_text())["config"]
    assert res["config"] == stored
    assert (stored["regime"]["gate"], stored["regime"]["feature_init"], stored["regime"]["feature_act"]) == \
        ("soft", "independent", "relu")
    assert (stored["arch"]["pool"], stored["arch"]["init"], stored["optimizer"]["name"], stored["logger"]["name"],
            stored["dataset"]["task"]) == ("flatten", "glorot", "sgd", "none", "classification")
    ckpt = checkpoints.load(tmp_path / "run" / "ckpt" / "last.pt")
    assert type(ckpt["regime"]["gate"]) is str and ckpt["regime"] == stored["regime"]


def _cli(args, env_extra, cwd=ROOT):
    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_cli_runs_and_writes_results(tiny_root, tmp_path):
    run = tmp_path / "cli"
    p = _cli(["epochs=2", "progress=false", "arch.dense=[32,32]", f"hydra.run.dir={run}"],
             {"GATELAB_DATA": str(tiny_root)})
    assert p.returncode == 0, p.stderr
    res = check_results(run, 2)
    assert res["config"]["dataset"]["name"] == "mnist" and res["config"]["optimizer"]["name"] == "adam"
    assert res["config"]["data"]["root"] is None  # came from $GATELAB_DATA


@pytest.mark.parametrize("args,needle,code", [
    (["regime=nope"], "conf/regime has no option nope", 2),
    (["nonsense_key=1"], "unknown key nonsense_key", 2),
    (["regime=flnpf", "regime.source=null"], "regime.source", 2),
    (["regime=flnpf", "regime.source=/does/not/exist"], "checkpoint not found: /does/not/exist", 2),
    (["dataset=cifar10", "data.download=false"], "cifar10.npz", 2),
])
def test_cli_bad_input_fails_clearly_before_training(tmp_path, args, needle, code):
    p = _cli([*args, f"hydra.run.dir={tmp_path / 'r'}", "progress=false"], {"GATELAB_DATA": str(tmp_path / "nodata")})
    assert p.returncode == code, (p.stdout, p.stderr)
    assert needle in p.stdout + p.stderr
    assert "epoch 1" not in p.stdout + p.stderr


def test_run_directory_is_keyed_by_the_config():
    from gatelab.core.runs import run_dir
    a = run_dir(make_cfg(["seed=1"]))
    assert a == run_dir(make_cfg(["seed=1", "device=cuda", "progress=true", "data.root=/elsewhere", "threads=1"]))
    assert a.parts[:3] == ("outputs", "runs", "mnist-fc-adam-lr0.0003") and a.parts[3] == "relu"
    others = {run_dir(make_cfg(o)) for o in (["seed=2"], ["seed=1", "epochs=2"], ["seed=1", "regime=dlnpf"],
                                               ["seed=1", "optimizer.lr=1e-3"], ["seed=1", "arch.dense=[8]"])}
    assert a not in others and len(others) == 5


@pytest.mark.slow
def test_cli_finds_its_run_again_skips_it_and_flnpf_auto_finds_its_relu_run(tiny_root, tmp_path):
    common = ["epochs=1", "progress=false", "arch.dense=[16,16]", f"out_root={tmp_path}"]
    env = {"GATELAB_DATA": str(tiny_root)}
    p = _cli(common, env)
    assert p.returncode == 0, p.stderr
    (relu_json,) = tmp_path.glob("runs/mnist-fc-adam-lr0.0003/relu/seed0-*/results.json")
    first = relu_json.read_text()
    p = _cli(common, env)
    assert p.returncode == 0 and "skipped" in p.stdout + p.stderr
    assert relu_json.read_text() == first
    p = _cli([*common, "regime=flnpf", "regime.source=auto"], env)
    assert p.returncode == 0, p.stdout + p.stderr
    (fl_json,) = tmp_path.glob("runs/mnist-fc-adam-lr0.0003/flnpf/seed0-*/results.json")
    res = json.loads(fl_json.read_text())
    assert res["status"] == "completed"
    assert res["model"]["source_checkpoint"] == str(relu_json.parent / "ckpt" / "best.pt")
    # No ReLU run for seed 3: the default regime.source=auto trains it first, then FLNPF; again: reused.
    p = _cli([*common, "regime=flnpf", "seed=3"], env)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log
    assert "relu seeds 3 is missing; training it first (mnist-fc-adam-lr0.0003/flnpf seeds 3 needs it)" in log
    assert log.index("training it first") < log.index("relu seed 3") if "relu seed 3" in log else True
    (relu3,) = tmp_path.glob("runs/mnist-fc-adam-lr0.0003/relu/seed3-*/results.json")
    (fl3,) = tmp_path.glob("runs/mnist-fc-adam-lr0.0003/flnpf/seed3-*/results.json")
    assert json.loads(relu3.read_text())["status"] == json.loads(fl3.read_text())["status"] == "completed"
    assert json.loads(fl3.read_text())["model"]["source_checkpoint"] == str(relu3.parent / "ckpt" / "best.pt")
    p = _cli([*common, "regime=flnpf", "seed=3", "force=true"], env)
    assert p.returncode == 0 and "seed 3: reusing the ReLU source" in p.stdout + p.stderr
    assert "training it first" not in p.stdout + p.stderr


TABLES = sorted(p.stem for p in (CONF / "experiment").glob("table*.yaml"))
SCALES = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml") if not p.stem.startswith(("table", "race")))
RACES = sorted(p.stem for p in (CONF / "experiment").glob("race_*.yaml"))


@pytest.mark.parametrize("experiment", TABLES)
def test_every_experiment_composes(experiment):
    cfg = make_cfg([f"+experiment={experiment}"])
    validate(cfg)
    assert cfg.seeds == [0, 1, 2, 3, 4]
    if experiment.startswith("table2_"):
        arch, opt = experiment.split("_")[1:]
        assert (cfg.arch.name, cfg.optimizer.name) == (arch, opt)
        assert cfg.dataset.name == ("mnist" if arch == "fc" else "cifar10")
    else:
        assert (cfg.dataset.name, cfg.arch.name, cfg.optimizer.name) == ("cifar10", "vconv", "adam")


@pytest.mark.parametrize("scale", SCALES)
def test_every_scale_composes_on_top_of_a_table(scale):
    table = "table4" if "table4" in scale else "table2_vconv_sgd"
    cfg = make_cfg([f"+experiment=[{table},{scale}]"])
    validate(cfg)
    if scale.startswith("quick"):
        assert cfg.seeds == [0, 1] and cfg.dataset.limit_train is not None


@pytest.mark.parametrize("extra", [None, *RACES])
def test_paper_004_experiments_compose_on_top_of_race(extra):
    cfg = make_cfg([f"+experiment=[race{',' + extra if extra else ''}]"])
    validate(cfg)
    assert (cfg.dataset.name, cfg.arch.dense, cfg.arch.init, cfg.optimizer.batch_size) == ("cifar10_binary", [300], "gaussian", 4)
    assert cfg.checkpoint_steps[0] == 0 and cfg.checkpoint_steps == sorted(cfg.checkpoint_steps)


def test_the_race_grid_is_table_1_of_paper_004():
    from gatelab.papers import races
    grid = _sweep_params("race")
    cells = {(float(s), int(n)) for s in grid["arch.init_std"] for n in grid["dataset.limit_train"]}
    assert cells == set(races.PAPER_TABLE1)
    assert _sweep_params("[race,race_imp]")["imp.sparsity"] == [str(p) for p in races.SPARSITIES]


def _sweep_params(experiments: str) -> dict:
    p = subprocess.run([sys.executable, str(ROOT / "run.py"), f"+experiment={experiments}", "--cfg", "hydra", "-p",
                        "hydra.sweeper.params"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    import yaml
    return {k: str(v).split(",") for k, v in yaml.safe_load(p.stdout).items()}


def test_the_sweep_grids_are_the_papers_tables():
    """The grids live once, in conf/experiment/: they give exactly the cells the reports lay out."""
    from gatelab.papers import dgn, npf
    for row in ("fc_sgd", "gconv_adam"):
        params = _sweep_params(f"table2_{row}")
        assert sorted(params["regime"] + ["flnpf"]) == sorted(npf.REGIMES)  # FLNPF: the second phase
        assert "optimizer.lr" not in params  # one step size per row, as the paper's code
    assert _sweep_params("[table2_fc_sgd,sgd_sweep]")["optimizer.lr"] == ["0.1", "0.01", "0.001"]
    soft = _sweep_params("table4_soft")
    assert soft["regime"] == ["soft_relu"] and [float(b) for b in soft["regime.beta"]] == dgn.TABLE4_BETAS
    assert sorted(_sweep_params("table4")["regime"]) == ["dln", "relu"]
    keys = {k for k in dgn.PAPER_TABLE4 if k[0] == "soft_relu"}
    assert keys == {("soft_relu", float(b), float(e)) for b in soft["regime.beta"] for e in soft["regime.eps"]}


def test_launcher_configs_compose():
    for launcher in ("local", "cluster"):
        with_launcher = make_cfg([f"hydra/launcher={launcher}"])
        assert with_launcher.dataset.name == "mnist"


@pytest.mark.slow
def test_experiment_without_plus_composes_and_a_sweep_over_seed_overrides_the_experiments_seeds(tmp_path):
    """Issue #57 §3: ``experiment=quick_fc`` (lightning-hydra-template's habit) composes as ``+experiment=``; and
    ``-m experiment=quick_fc seed=0,1`` sweeps the two seeds although the experiment sets ``seeds``."""
    p = subprocess.run([sys.executable, str(ROOT / "run.py"), "experiment=quick_fc", "--cfg", "job"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0 and "epochs: 3" in p.stdout, p.stderr[-1500:]
    data = write_tiny_data(tmp_path / "data")
    p = subprocess.run([sys.executable, str(ROOT / "run.py"), "-m", "experiment=quick_fc", "seed=0,1", "--dry-run",
                        f"data.root={data}", f"out_root={tmp_path / 'out'}"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:]
    assert "sweep of 2 jobs" in p.stdout and "relu seeds 0\n" in p.stdout and "relu seeds 1\n" in p.stdout
