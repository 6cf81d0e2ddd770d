"""``runs.compose`` keeps Hydra's composition of the config groups per selection and applies the plain overrides
with Hydra's own function: every config, error and run key is what a fresh Hydra compose gives."""
import pytest
from hydra import compose as hydra_compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf, open_dict

from gatelab.core import runs
from gatelab.core.config import CONF_DIR, register

CASES = [
    [],
    ["regime=flnpf", "regime.source=auto", "arch=gconv", "dataset=cifar10"],
    ["+experiment=routing_reduced", "dataset.routing.K=4", "seeds=[100,101]", "optimizer.lr=1e-2", "out_root=x"],
    ["+experiment=routing_reduced", "dataset=routing_mnist_rot", "regime=leaky", "dataset.routing.K=16"],
    ["+experiment=[race,race_imp]", "imp.sparsity=0.2", "dataset.limit_train=800", "arch.dense=[1000]",
     "arch.init_std=1e-3", "loss_trace=[0,3000]", "checkpoint_steps=[]"],
    ["+experiment=table4", "regime=soft_relu", "regime.beta=8", "regime.eps=0.4", "++epochs=3", "data.root=null"],
    ["dataset.limit_train=64", "+extra_note=hello", "optimizer=sgd", "optimizer.momentum=0.9", "seed=3"],
    ["hydra/launcher=cluster", "threads=1", "progress=false"],
    ["~checkpoint_steps", "epochs=4"],
    ["dataset.limit_train=3", "dataset={limit_train:5}"],  # a group's key given a dict: Hydra's order (5)
]


def typed(x):
    """A container as (type, value) all the way down: 1 and 1.0 and True differ."""
    if isinstance(x, dict):
        return {k: typed(v) for k, v in x.items()}
    if isinstance(x, list):
        return [typed(v) for v in x]
    return type(x).__name__, x


def fresh(overrides):
    """What Hydra composes from scratch (the ``hydra`` node dropped, as ``runs.compose`` drops it)."""
    register()
    runs.register_resolver()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    with open_dict(cfg):
        cfg.pop("hydra", None)
    return cfg


@pytest.mark.parametrize("overrides", CASES, ids=lambda o: " ".join(o)[:40] or "defaults")
def test_compose_gives_what_hydra_composes(overrides):
    ours, theirs = runs.compose(overrides), fresh(overrides)
    assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(theirs)
    assert typed(OmegaConf.to_container(ours)) == typed(OmegaConf.to_container(theirs))  # the types too
    assert runs.run_subdir(runs.job_config(ours)) == runs.run_subdir(runs.job_config(theirs))
    assert OmegaConf.is_struct(ours) == OmegaConf.is_struct(theirs)


@pytest.mark.parametrize("bad", [["epoch=3"], ["+experiment=routing_reduced", "dataset.routing.KK=4"],
                                 ["+seed=4"], ["~epochs=11"]])
def test_a_bad_override_fails_as_in_hydra(bad):
    with pytest.raises(ConfigCompositionException) as theirs:
        fresh(bad)
    with pytest.raises(ConfigCompositionException) as ours:
        runs.compose(bad)
    assert str(ours.value) == str(theirs.value)


def test_each_caller_gets_its_own_config_and_a_conf_change_is_seen(monkeypatch, tmp_path):
    a = runs.compose(["+experiment=routing_reduced", "dataset.routing.K=4"])
    a.dataset.routing.M = 99
    a.epochs = 1
    b = runs.compose(["+experiment=routing_reduced", "dataset.routing.K=6"])
    assert (b.dataset.routing.M, b.epochs, b.dataset.routing.K) == (20, 15, 6)
    # the conf files' state is part of the cache's key: an edited file is composed again
    calls = []
    real = runs._hydra_compose.__wrapped__
    monkeypatch.setattr(runs, "_hydra_compose", runs.functools.lru_cache(maxsize=8)(
        lambda ov, state: calls.append(ov) or real(ov, state)))
    runs.compose(["+experiment=routing_reduced", "seed=1"])
    runs.compose(["+experiment=routing_reduced", "seed=2"])
    assert calls == [("+experiment=routing_reduced",)]
    state = runs._conf_state()
    monkeypatch.setattr(runs, "_conf_state", lambda: state + (("edited", 1, 1),))
    runs.compose(["+experiment=routing_reduced", "seed=3"])
    assert len(calls) == 2
