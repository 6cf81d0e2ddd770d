"""What data a run saw (issue #56): results.json names every data file it read with its sha256, computed once per
file (remembered by size and mtime, computed anew when the file changes); the backbone feature cache is keyed by
the code that computes the features."""
import hashlib
import json
from types import SimpleNamespace

import numpy as np
import torch

from conftest import make_cfg
from gatelab.data import backbone, datasets
from gatelab.training.loop import train


def test_a_run_records_the_digest_of_the_data_file_it_read(tiny_root, tmp_path, monkeypatch):
    monkeypatch.setenv("GATELAB_CACHE", str(tmp_path / "cache"))
    res = train(make_cfg(["epochs=1", "arch.dense=[8]", "dataset.limit_train=64", "dataset.limit_test=32"],
                         tiny_root), tmp_path / "run")
    npz = (tiny_root / "mnist.npz").resolve()
    assert res["env"]["data_files"] == {str(npz): hashlib.sha256(npz.read_bytes()).hexdigest()}
    book = json.loads((tmp_path / "cache" / datasets.DIGESTS).read_text())
    assert book[str(npz)][2] == hashlib.sha256(npz.read_bytes()).hexdigest()


def test_a_digest_is_remembered_by_size_and_mtime_and_computed_anew_when_the_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("GATELAB_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "x.npz"
    f.write_bytes(b"one")
    first = datasets.digest(f)
    calls = []
    real = hashlib.sha256
    monkeypatch.setattr(hashlib, "sha256", lambda *a: calls.append(1) or real(*a))
    assert datasets.digest(f) == first and not calls  # remembered
    f.write_bytes(b"two, longer")
    assert datasets.digest(f) == real(b"two, longer").hexdigest() and calls


def test_the_feature_cache_is_keyed_by_the_code_that_computes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GATELAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(backbone, "load_resnet20", lambda root, name: None)
    made = []
    monkeypatch.setattr(backbone, "rotated_features",
                        lambda net, images, index, kind: made.append(1) or torch.zeros(len(images), 2, 3))
    splits = {"train": (torch.zeros(4, 3, 8, 8, dtype=torch.uint8), torch.zeros(4))}
    cfg = SimpleNamespace(features="penultimate", M=2, max_angle=90.0, get=lambda k, d=None: d)
    backbone.cached_features(cfg, tmp_path, splits, torch.zeros(1))
    backbone.cached_features(cfg, tmp_path, splits, torch.zeros(1))
    assert len(made) == 1  # the second read the cache
    monkeypatch.setattr(backbone, "feature_code", lambda: "another")
    backbone.cached_features(cfg, tmp_path, splits, torch.zeros(1))
    assert len(made) == 2 and len(list((tmp_path / "cache" / "features").glob("*.npz"))) == 2
    assert np.load(next((tmp_path / "cache" / "features").glob("*.npz")))["train"].shape == (4, 6)
