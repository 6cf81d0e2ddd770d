"""Run keys are stable: literal keys are pinned, a field added later with its default leaves every
key unchanged (so completed runs are still found and skipped), and ``rekey`` migrates directories."""
import dataclasses
import json

import pytest
from omegaconf import OmegaConf

from conftest import make_cfg
from gatelab.core import config, runs
from gatelab.training.loop import train

# Keys of runs made before the schema grew (computed at commit d266cfa, the last flat-layout commit).
PINNED = [
    ([], "695a7c11fc"),
    (["regime=flnpf", "regime.source=auto", "arch=gconv", "dataset=cifar10"], "20d026662f"),
    (["regime=dlnpf", "optimizer=sgd", "optimizer.lr=0.01"], "917c31ea5a"),
    (["+experiment=table4", "regime=soft_relu", "regime.beta=8", "regime.eps=0.4"], "94225b3c5b"),
    (["dataset=binary_mnist", "regime=soft_galu", "regime.feature_act=relu", "optimizer=rmsprop", "optimizer.lr=1e-4",
      "arch.dense=[100,100,100,100,100]"], "99efbb05bc"),
    (["arch=vconv", "dataset=cifar10", "regime=frnpf_ii", "epochs=80", "seed=3", "dataset.limit_train=1000"],
     "49783dada6"),
]


@pytest.mark.parametrize("overrides,key", PINNED)
def test_pinned_run_keys(overrides, key):
    cfg = runs.compose(overrides)  # as `python run.py <overrides>` composes it
    assert runs.run_key(cfg) == key
    assert runs.run_dir(cfg).name.endswith(f"-{key}")


def test_flnpf_default_source_is_auto_and_keeps_the_key_of_explicit_auto():
    assert runs.compose(["regime=flnpf"]).regime.source == "auto"
    assert runs.run_key(make_cfg(["regime=flnpf"])) == runs.run_key(make_cfg(["regime=flnpf", "regime.source=auto"]))


def _grown_schema():
    """The schema as if a field ``dataset.domains`` (default 1) had been added with config.later."""
    Dataset = dataclasses.make_dataclass("DatasetConfig", [("domains", int, config.later(1))],
                                         bases=(config.DatasetConfig,))
    return dataclasses.make_dataclass("Config", [("dataset", Dataset, dataclasses.field(default=None))],
                                      bases=(config.Config,))


def _with_domains(cfg, domains: int):
    grown = OmegaConf.create(OmegaConf.to_container(cfg, enum_to_str=True))
    grown.dataset.domains = domains
    return grown


def test_a_field_added_later_at_its_default_keeps_keys_and_a_completed_run_is_skipped(tiny_root, tmp_path,
                                                                                      monkeypatch):
    cfg = make_cfg(["arch.dense=[8]", f"out_root={tmp_path}"], tiny_root)
    first = train(cfg, runs.run_dir(cfg))
    assert first["status"] == "completed"
    monkeypatch.setattr(runs, "SCHEMA", _grown_schema())
    at_default = _with_domains(cfg, 1)
    assert runs.run_key(at_default) == runs.run_key(cfg)
    again = train(at_default, runs.run_dir(at_default))
    assert again.get("skipped") and again["best_test_acc"] == first["best_test_acc"]
    assert runs.run_key(_with_domains(cfg, 2)) != runs.run_key(cfg)  # a real change is a new run


def test_a_field_added_without_later_would_rekey_and_rekey_moves_the_runs(tiny_root, tmp_path, monkeypatch):
    cfg = make_cfg(["arch.dense=[8]", f"out_root={tmp_path}"], tiny_root)
    old_dir = runs.run_dir(cfg)
    train(cfg, old_dir)
    # The field added without config.later: every key changes; the stored configs are migrated too.
    Dataset = dataclasses.make_dataclass("DatasetConfig", [("domains", int, 1)], bases=(config.DatasetConfig,))
    plain_schema = dataclasses.make_dataclass("Config", [("dataset", Dataset, dataclasses.field(default=None))],
                                              bases=(config.Config,))
    monkeypatch.setattr(runs, "SCHEMA", plain_schema)
    grown = _with_domains(cfg, 1)
    assert runs.run_dir(grown) != old_dir
    results = old_dir / "results.json"
    res = json.loads(results.read_text())
    res["config"]["dataset"]["domains"] = 1
    results.write_text(json.dumps(res))
    assert runs.rekey(tmp_path, dry_run=True) == [(old_dir, runs.run_dir(grown))]
    assert old_dir.is_dir()
    runs.main(["rekey", str(tmp_path)])
    assert not old_dir.exists() and (runs.run_dir(grown) / "results.json").is_file()
    assert train(grown, runs.run_dir(grown)).get("skipped")
    assert runs.rekey(tmp_path) == []  # idempotent
