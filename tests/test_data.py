"""The dataset cache loader and the on-device batching."""
import numpy as np
import pytest
import torch

from conftest import make_cfg
from gatelab.data import datasets as data_mod


def _load(root, *over):
    cfg = make_cfg(list(over), root)
    return data_mod.load(cfg.dataset, cfg.data, "cpu")


def test_cache_file_is_read_as_uint8_nchw_and_scaled_on_the_fly(tiny_root):
    d = _load(tiny_root)
    raw = np.load(tiny_root / "mnist.npz")
    assert d.train.x.dtype == torch.uint8 and d.train.x.shape == (240, 1, 28, 28)
    assert torch.equal(d.train.x[:, 0], torch.from_numpy(raw["x_train"]))
    xb, yb = next(d.train.batches(32))
    assert xb.dtype == torch.float32 and 0 <= xb.min() and xb.max() <= 1
    torch.testing.assert_close(xb[0, 0], torch.from_numpy(raw["x_train"][0]).float() / 255)
    c = _load(tiny_root, "dataset=cifar10")
    assert c.train.x.shape == (240, 3, 32, 32) and c.in_shape == (3, 32, 32) and c.out_dim == 10
    assert torch.equal(c.train.x[5].permute(1, 2, 0), torch.from_numpy(np.load(tiny_root / "cifar10.npz")["x_train"][5]))


def test_binary_mnist_is_4_vs_7_with_plus_minus_one_targets(tiny_root):
    d = _load(tiny_root, "dataset=binary_mnist")
    raw = np.load(tiny_root / "mnist.npz")
    keep = np.isin(raw["y_train"], [4, 7])
    assert d.out_dim == 1 and d.task == "binary" and len(d.train) == keep.sum()
    expected = np.where(raw["y_train"][keep] == 7, 1.0, -1.0)
    assert torch.equal(d.train.y, torch.from_numpy(expected).float())


def test_limits_take_the_first_examples_class_balanced(tiny_root):
    d = _load(tiny_root, "dataset.limit_train=50", "dataset.limit_test=20")
    assert len(d.train) == 50 and len(d.test) == 20
    assert torch.bincount(d.train.y, minlength=10).tolist() == [5] * 10
    y = np.load(tiny_root / "mnist.npz")["y_train"]
    first = np.concatenate([np.flatnonzero(y == c)[:5] for c in range(10)])
    assert torch.equal(d.train.y, torch.from_numpy(y[np.sort(first)].astype(np.int64)))


def test_shuffled_batches_visit_every_example_once_and_depend_on_the_generator(tiny_root):
    d = _load(tiny_root)
    def order(seed):
        g = torch.Generator().manual_seed(seed)
        return torch.cat([yb for _, yb in d.train.batches(32, g, shuffle=True)])
    a, b, c = order(0), order(0), order(1)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(torch.sort(a).values, torch.sort(d.train.y).values)
    assert [len(yb) for _, yb in d.train.batches(100)] == [100, 100, 40]


def test_data_root_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("GATELAB_DATA", str(tmp_path / "env"))
    assert data_mod.cache_path("mnist") == tmp_path / "env" / "mnist.npz"
    assert data_mod.cache_path("mnist", str(tmp_path / "x")) == tmp_path / "x" / "mnist.npz"
    monkeypatch.delenv("GATELAB_DATA")
    assert data_mod.cache_path("cifar10").parts[-3:] == (".cache", "gatelab", "cifar10.npz")


def test_first_use_downloads_with_torchvision_and_writes_the_cache(monkeypatch, tmp_path):
    import torchvision

    class FakeMNIST:  # stands in for the network: same attributes as torchvision.datasets.MNIST
        def __init__(self, root, train, download):
            assert download
            n = 30 if train else 10
            self.data = torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8)
            self.targets = torch.arange(n) % 10
    monkeypatch.setattr(torchvision.datasets, "MNIST", FakeMNIST)
    arrays = data_mod.load_arrays("mnist", str(tmp_path))
    assert (tmp_path / "mnist.npz").is_file()
    assert arrays["x_train"].shape == (30, 28, 28) and arrays["x_train"].dtype == np.uint8
    assert arrays["y_test"].tolist() == list(range(10))
    assert not list(tmp_path.glob(".*tmp*"))  # written atomically, no leftovers


def test_missing_file_without_download_names_the_expected_path(tmp_path):
    with pytest.raises(data_mod.DataNotFoundError, match=str(tmp_path / "mnist.npz")):
        data_mod.load_arrays("mnist", str(tmp_path), download=False)


def test_cut_writes_a_smaller_cache_whose_images_are_those_limit_train_picks(tiny_root, tmp_path):
    """The device upload's CIFAR-10 file (issue #19): same format, the first balanced images, so
    dataset.limit_train=N reads the same images from the cut file as from the full one."""
    path = data_mod.cut("mnist", str(tiny_root), tmp_path, 40, 20)
    small = data_mod.load_arrays("mnist", str(tmp_path), download=False)
    assert path == tmp_path / "mnist.npz" and len(small["y_train"]) == 40 and len(small["y_test"]) == 20
    assert np.bincount(small["y_train"]).tolist() == [4] * 10
    full = data_mod.load(make_cfg(["dataset.limit_train=40"], tiny_root).dataset, make_cfg([], tiny_root).data, "cpu")
    cfg = make_cfg(["dataset.limit_train=40"], tmp_path)
    cut = data_mod.load(cfg.dataset, cfg.data, "cpu")
    assert torch.equal(full.train.x, cut.train.x) and torch.equal(full.train.y, cut.train.y)


@pytest.mark.parametrize("kind", ["labels", "pixels"])
def test_corrupt_replaces_the_training_labels_or_pixels_only_and_the_same_for_every_run(tiny_root, kind):
    """Paper 002 Fig 5 (Zhang et al.'s random labels / random pixels): the test split is untouched."""
    ds = make_cfg(["dataset=mnist"], tiny_root)
    clean = data_mod.load(ds.dataset, ds.data, "cpu")
    bad_cfg = make_cfg(["dataset=mnist", f"dataset.corrupt={kind}", "seed=3"], tiny_root)
    bad = data_mod.load(bad_cfg.dataset, bad_cfg.data, "cpu")
    again = data_mod.load(make_cfg(["dataset=mnist", f"dataset.corrupt={kind}"], tiny_root).dataset, ds.data, "cpu")
    assert torch.equal(bad.test.x, clean.test.x) and torch.equal(bad.test.y, clean.test.y)
    assert torch.equal(bad.train.x, again.train.x) and torch.equal(bad.train.y, again.train.y)  # not the run's seed
    if kind == "labels":
        assert torch.equal(bad.train.x, clean.train.x) and bad.train.y.dtype == clean.train.y.dtype
        agree = (bad.train.y == clean.train.y).double().mean().item()
        assert agree < 0.25 and set(bad.train.y.tolist()) == set(range(10))  # about 1 in 10 by chance
    else:
        assert torch.equal(bad.train.y, clean.train.y)
        a, b = bad.train.x.flatten(1), clean.train.x.flatten(1)
        assert torch.equal(a.sort(1).values, b.sort(1).values)  # each image's own pixels, in another order
        assert (a != b).any(1).all()
