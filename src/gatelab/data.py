"""Datasets held on the device as uint8 tensors, batched without per-sample Python.

Cache format (shared with ``../shared/data``): ``<root>/<source>.npz`` with uint8 arrays
``x_train, y_train, x_test, y_test``, images NHWC ((N,28,28) for MNIST). Inputs are scaled
to [0,1] on the fly, no mean/std normalisation, no augmentation (paper 001 §6.1 and code).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import numpy as np
import torch

ENV_ROOT = "GATELAB_DATA"
KEYS = ("x_train", "y_train", "x_test", "y_test")
_TORCHVISION = {"mnist": "MNIST", "cifar10": "CIFAR10"}


class DataNotFoundError(FileNotFoundError):
    """The cache file is absent and could not be made."""


def data_root(root: Optional[str] = None) -> Path:
    """``data.root``, else ``$GATELAB_DATA``, else ``~/.cache/gatelab``."""
    root = root or os.environ.get(ENV_ROOT) or os.path.join(os.path.expanduser("~"), ".cache", "gatelab")
    return Path(root).expanduser()


def cache_path(source: str, root: Optional[str] = None) -> Path:
    return data_root(root) / f"{source}.npz"


def _atomic_savez(path: Path, arrays: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _download(source: str, path: Path) -> None:
    """Build the cache file from a torchvision download (needs internet)."""
    import torchvision

    cls = getattr(torchvision.datasets, _TORCHVISION[source])
    raw = path.parent / "torchvision"
    arrays = {}
    for split, train in (("train", True), ("test", False)):
        ds = cls(str(raw), train=train, download=True)
        x = ds.data.numpy() if torch.is_tensor(ds.data) else np.asarray(ds.data)
        y = ds.targets.numpy() if torch.is_tensor(ds.targets) else np.asarray(ds.targets)
        arrays[f"x_{split}"] = x.astype(np.uint8)
        arrays[f"y_{split}"] = y.astype(np.uint8)
    _atomic_savez(path, arrays)


def load_arrays(source: str, root: Optional[str] = None, download: bool = True) -> dict:
    """The four uint8 arrays of ``<root>/<source>.npz``, downloading the file on first use."""
    path = cache_path(source, root)
    if not path.is_file():
        hint = (f"Expected the dataset cache file {path} (uint8 arrays {', '.join(KEYS)}, images NHWC). "
                f"Point data.root=<dir> or ${ENV_ROOT} at a directory holding {path.name} "
                f"(e.g. ../shared/data), or run once with internet access so torchvision can download it.")
        if not download:
            raise DataNotFoundError(hint)
        try:
            _download(source, path)
        except Exception as e:  # no internet, no torchvision, full disk...
            raise DataNotFoundError(f"{hint} The download failed: {type(e).__name__}: {e}") from None
    with np.load(path) as f:
        missing = [k for k in KEYS if k not in f.files]
        if missing:
            raise DataNotFoundError(f"{path} lacks arrays {missing}; expected {', '.join(KEYS)}")
        return {k: f[k] for k in KEYS}


def first_balanced(y: np.ndarray, n: Optional[int]) -> np.ndarray:
    """Indices of the first ``n`` examples, as equal per class as the classes allow, in data order."""
    if n is None or n >= len(y):
        return np.arange(len(y))
    classes = np.unique(y)
    per_class = {c: np.flatnonzero(y == c) for c in classes}
    quota, rest = divmod(n, len(classes))
    take = []
    for i, c in enumerate(classes):
        take.append(per_class[c][: quota + (i < rest)])
    idx = np.sort(np.concatenate(take))
    if len(idx) < n:  # a class too small for its quota: fill with the next unused examples
        extra = np.setdiff1d(np.arange(len(y)), idx)[: n - len(idx)]
        idx = np.sort(np.concatenate([idx, extra]))
    return idx


@dataclass
class Split:
    """One split on the device: ``x`` uint8 (N,C,H,W), ``y`` int64 labels or float +-1 targets."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return self.x.shape[0]

    @staticmethod
    def scale(xb: torch.Tensor) -> torch.Tensor:
        return xb.float().div_(255.0)

    def batches(self, batch_size: int, generator: Optional[torch.Generator] = None,
                shuffle: bool = False) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Mini-batches, reshuffled each call with ``generator`` (a CPU generator, see :meth:`stacked_batches`)."""
        n = len(self)
        order = torch.randperm(n, generator=generator).to(self.x.device) if shuffle else None
        for start in range(0, n, batch_size):
            if order is None:
                sl = slice(start, start + batch_size)
                yield self.scale(self.x[sl]), self.y[sl]
            else:
                idx = order[start:start + batch_size]
                yield self.scale(self.x[idx]), self.y[idx]


    def stacked_batches(self, batch_size: int, generators: list) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Mini-batches for S seeds trained together: (S, B, C, H, W) inputs and (S, B) targets, seed s
        in the order of ``generators[s]`` (each reshuffled per call, as :meth:`batches` does).

        The generators are CPU generators whatever the data's device: the data order of a seed is the
        same on every device, and a checkpoint's RNG state resumes on another device. One (S, N)
        permutation per epoch goes to the device; the batches are gathered there."""
        n = len(self)
        order = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(self.x.device)
        for start in range(0, n, batch_size):
            idx = order[:, start:start + batch_size]
            yield self.scale(self.x[idx]), self.y[idx]


@dataclass
class Data:
    train: Split
    test: Split
    in_shape: tuple  # (C,H,W)
    out_dim: int  # 10 for classification, 1 for binary (scalar output)
    task: str


def _split(x: np.ndarray, y: np.ndarray, task: str, classes, limit: Optional[int], device) -> Split:
    if task == "binary":
        keep = np.isin(y, classes)
        x, y = x[keep], y[keep]
    idx = first_balanced(y, limit)
    x, y = x[idx], y[idx]
    if x.ndim == 3:
        x = x[:, :, :, None]
    xt = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))).to(device)
    if task == "binary":
        yt = torch.from_numpy(np.where(y == classes[1], 1.0, -1.0).astype(np.float32)).to(device)
    else:
        yt = torch.from_numpy(y.astype(np.int64)).to(device)
    return Split(xt, yt)


def load(ds_cfg, data_cfg, device) -> Data:
    """Load the dataset of ``ds_cfg`` (:class:`gatelab.config.DatasetConfig`) onto ``device``."""
    arrays = load_arrays(ds_cfg.source, data_cfg.root, data_cfg.download)
    classes = list(ds_cfg.classes) if ds_cfg.classes is not None else None
    if ds_cfg.task == "binary":
        present = set(np.unique(arrays["y_train"]).tolist())
        if not set(classes) <= present:
            raise ValueError(f"dataset.classes={classes} not all present in {ds_cfg.source} labels {sorted(present)}")
    train = _split(arrays["x_train"], arrays["y_train"], ds_cfg.task, classes, ds_cfg.limit_train, device)
    test = _split(arrays["x_test"], arrays["y_test"], ds_cfg.task, classes, ds_cfg.limit_test, device)
    out_dim = 1 if ds_cfg.task == "binary" else ds_cfg.num_classes
    return Data(train, test, tuple(train.x.shape[1:]), out_dim, ds_cfg.task)
