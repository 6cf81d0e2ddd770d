"""Datasets held on the device as uint8 tensors, batched without per-sample Python.

Cache format (shared with ``../shared/data``): ``<root>/<source>.npz`` with uint8 arrays
``x_train, y_train, x_test, y_test``, images NHWC ((N,28,28) for MNIST). Inputs are scaled on the
fly by ``dataset.normalize`` (default ``unit``: x/255, no mean/std, no augmentation: paper 001 §6.1
and code). ``dataset.grayscale`` stores float luma; ``dataset.class_groups`` merges classes
(paper 004: CIFAR-10 airplane+cat vs automobile+bird).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
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
    """Build the cache file from a torchvision download (needs internet). The raw files go to a
    temporary folder beside it, removed whatever happens: a failed download leaves nothing behind."""
    import torchvision

    cls = getattr(torchvision.datasets, _TORCHVISION[source])
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = Path(tempfile.mkdtemp(prefix=f".torchvision-{source}-", dir=path.parent))
    try:
        arrays = {}
        for split, train in (("train", True), ("test", False)):
            ds = cls(str(raw), train=train, download=True)
            x = ds.data.numpy() if torch.is_tensor(ds.data) else np.asarray(ds.data)
            y = ds.targets.numpy() if torch.is_tensor(ds.targets) else np.asarray(ds.targets)
            arrays[f"x_{split}"] = x.astype(np.uint8)
            arrays[f"y_{split}"] = y.astype(np.uint8)
        _atomic_savez(path, arrays)
    finally:
        shutil.rmtree(raw, ignore_errors=True)
        for p in made:  # the folders this download created, where it left them empty
            if p.is_dir() and not any(p.iterdir()):
                p.rmdir()


def _missing_hint(path: Path) -> str:
    return (f"Expected the dataset cache file {path} (uint8 arrays {', '.join(KEYS)}, images NHWC). "
            f"Point data.root=<dir> or ${ENV_ROOT} at a directory holding {path.name} "
            f"(e.g. ../shared/data), or run once with internet access so torchvision can download it.")


def _fetch(source: str, path: Path) -> None:
    """Download the cache file, or raise :class:`DataNotFoundError` in one line: where the file was
    expected, that the download failed and why, and the two ways to fix it."""
    try:
        _download(source, path)
    except Exception as e:  # noqa: BLE001 - no internet, no torchvision, a full disk...
        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()] or [""]
        why = lines[0].rstrip(":") + (f": {lines[-1]}" if len(lines) > 1 else "")  # what failed, and the last cause
        raise DataNotFoundError(
            f"{path} not found, and downloading it failed ({type(e).__name__}: {why}). Either point data.root=<dir> "
            f"or ${ENV_ROOT} at a directory holding {path.name}, or run once with internet access.") from None


def check_available(source: str, root: Optional[str] = None, download: bool = True) -> None:
    """Make sure ``<root>/<source>.npz`` is there before anything trains: download it now if allowed,
    else raise :class:`DataNotFoundError`."""
    path = cache_path(source, root)
    if not path.is_file():
        if not download:
            raise DataNotFoundError(_missing_hint(path))
        _fetch(source, path)
    with _opened(path) as f:  # a truncated or foreign file fails here, in the plan, not at the first epoch
        _check_keys(path, f)


class _opened:
    """``np.load(path)`` whose failure (a truncated download, another format) is one DataNotFoundError naming the
    file and what to do."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        import zipfile
        try:
            self.f = np.load(self.path)
            self.f.files  # noqa: B018 - reads the zip's directory: a truncated file fails here
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
            raise DataNotFoundError(f"{self.path} is not a readable .npz ({type(e).__name__}: {e}); delete it and "
                                    f"fetch it again, or point data.root (or ${ENV_ROOT}) at a good copy") from None
        return self.f

    def __exit__(self, *exc):
        self.f.close()


def _check_keys(path: Path, f) -> None:
    missing = [k for k in KEYS if k not in f.files]
    if missing:
        raise DataNotFoundError(f"{path} lacks arrays {missing}; expected {', '.join(KEYS)}")


DIGESTS = "digests.json"  # in the user's cache: {path: [size, mtime_ns, sha256]}


def digest(path: Path) -> str:
    """The sha256 of a data file, computed once per (path, size, mtime) and remembered in
    ``~/.cache/gatelab/digests.json`` (or ``$GATELAB_CACHE``); a cache that cannot be written is not an error."""
    import hashlib
    import json
    path = Path(path).resolve()
    st = path.stat()
    book = Path(os.environ.get("GATELAB_CACHE", Path.home() / ".cache" / "gatelab")).expanduser() / DIGESTS
    try:
        known = json.loads(book.read_text()) if book.is_file() else {}
    except (OSError, ValueError):
        known = {}
    hit = known.get(str(path))
    if hit and hit[:2] == [st.st_size, st.st_mtime_ns]:
        return hit[2]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    known[str(path)] = [st.st_size, st.st_mtime_ns, h.hexdigest()]
    try:
        book.parent.mkdir(parents=True, exist_ok=True)
        tmp = book.with_name(f".{book.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=0, sort_keys=True))
        os.replace(tmp, book)
    except OSError:
        pass
    return h.hexdigest()


def load_arrays(source: str, root: Optional[str] = None, download: bool = True) -> dict:
    """The four uint8 arrays of ``<root>/<source>.npz``, downloading the file on first use."""
    path = cache_path(source, root)
    if not path.is_file():
        if not download:
            raise DataNotFoundError(_missing_hint(path))
        _fetch(source, path)
    import zipfile
    with _opened(path) as f:
        _check_keys(path, f)
        try:
            return {k: f[k] for k in KEYS}
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:  # a member cut short or corrupt (its CRC)
            raise DataNotFoundError(f"{path} is not a readable .npz ({type(e).__name__}: {e}); delete it and fetch "
                                    f"it again, or point data.root (or ${ENV_ROOT}) at a good copy") from None


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


LUMA = (0.299, 0.587, 0.114)  # ITU-R 601 luma weights of R, G, B


@dataclass
class Split:
    """One split on the device: ``x`` uint8 (N,C,H,W) (float luma when grayscale), ``y`` int64
    labels or float +-1 targets; the network sees ``(x - shift) / div``."""

    x: torch.Tensor
    y: torch.Tensor
    shift: float = 0.0
    div: float = 255.0

    def __len__(self) -> int:
        return self.x.shape[0]

    def scale(self, xb: torch.Tensor) -> torch.Tensor:
        """Network inputs from stored examples ``xb`` (fp32, a new tensor)."""
        z = xb.float() if xb.dtype == torch.uint8 else xb.clone()
        if self.shift:
            z.sub_(self.shift)
        return z.div_(self.div)

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


    def stacked_batches(self, batch_size: int, generators: list, skip: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Mini-batches for S seeds trained together: (S, B, C, H, W) inputs and (S, B) targets, seed s
        in the order of ``generators[s]`` (each reshuffled per call, as :meth:`batches` does).

        The generators are CPU generators whatever the data's device: the data order of a seed is the
        same on every device, and a checkpoint's RNG state resumes on another device. One (S, N)
        permutation per epoch goes to the device; the batches are gathered there. ``skip``: start
        after that many batches of the epoch's order (a resume inside an epoch)."""
        n = len(self)
        order = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(self.x.device)
        for start in range(skip * batch_size, n, batch_size):
            idx = order[:, start:start + batch_size]
            yield self.scale(self.x[idx]), self.y[idx]


@dataclass
class Data:
    train: Split
    test: Split
    in_shape: tuple  # (C,H,W)
    out_dim: int  # 10 for classification, 1 for binary (scalar output)
    task: str
    files: dict = field(default_factory=dict)  # {data file read: its sha256} (results.json's env.data_files)


def _split(x: np.ndarray, y: np.ndarray, ds_cfg, limit: Optional[int], device) -> Split:
    """The examples of one split that ``ds_cfg`` keeps (binary classes, class groups; the first
    ``limit``, balanced over the source classes), NCHW on ``device``, unscaled."""
    task, classes, groups = ds_cfg.task, ds_cfg.classes, ds_cfg.get("class_groups")
    kept = classes if task == "binary" else [c for g in groups for c in g] if groups is not None else None
    if kept is not None:
        keep = np.isin(y, list(kept))
        x, y = x[keep], y[keep]
    idx = first_balanced(y, limit)
    x, y = x[idx], y[idx]
    if x.ndim == 3:
        x = x[:, :, :, None]
    if ds_cfg.get("grayscale"):
        if x.shape[-1] != 3:
            raise ValueError(f"dataset.grayscale=true needs RGB images; {ds_cfg.source} has {x.shape[-1]} channel(s)")
        x = (x.astype(np.float32) @ np.asarray(LUMA, dtype=np.float32))[..., None]
    xt = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))).to(device)
    if task == "binary":
        yt = torch.from_numpy(np.where(y == classes[1], 1.0, -1.0).astype(np.float32)).to(device)
    elif groups is not None:
        group_of = np.full(256, -1, dtype=np.int64)
        for i, g in enumerate(groups):
            group_of[list(g)] = i
        yt = torch.from_numpy(group_of[y]).to(device)
    else:
        yt = torch.from_numpy(y.astype(np.int64)).to(device)
    return Split(xt, yt)


def normalizer(kind: str, train_x: torch.Tensor) -> tuple[float, float]:
    """``(shift, div)`` of ``dataset.normalize`` for pixels in [0,255] (standardize: from the
    training split's pixels, one mean and one standard deviation)."""
    if kind == "unit":
        return 0.0, 255.0
    if kind == "pm1":
        return 127.5, 127.5
    if kind == "standardize":
        x = train_x.double()
        std = float(x.std())
        if not std > 0:
            raise ValueError("dataset.normalize=standardize: the training pixels have no spread")
        return float(x.mean()), std
    raise ValueError(f"unknown dataset.normalize {kind!r}")


def _routing_features(routing, data_cfg, train: Split, test: Split) -> tuple[Split, Split]:
    """Splits whose examples are the (1, 1, M·512) backbone features of the M rotated copies."""
    from gatelab.data import backbone, routing_tasks as routing_mod
    index = routing_mod.input_index("rotate", routing.M, tuple(train.x.shape[1:]), routing.max_angle, torch.Generator())
    feats = backbone.cached_features(routing, data_root(data_cfg.root),
                                     {"train": (train.x.cpu(), train.y.cpu()), "test": (test.x.cpu(), test.y.cpu())},
                                     index)
    return tuple(Split(feats[k].view(len(s), 1, 1, -1).to(s.x.device), s.y) for k, s in (("train", train), ("test", test)))


CORRUPT_SEED = 0  # the generator of dataset.corrupt: one corrupted training set for every run and seed


def corrupt(split: Split, kind: str, classes: int) -> Split:
    """``dataset.corrupt`` (:class:`gatelab.core.config.Corrupt`) applied to a training split: uniform
    random labels, or each image's pixels in an order of its own (its histogram kept)."""
    if kind in (None, "none"):
        return split
    gen = torch.Generator().manual_seed(CORRUPT_SEED)
    if kind == "labels":
        y = torch.randint(0, classes, split.y.shape, generator=gen)
        return Split(split.x, y.to(split.y.device, split.y.dtype))
    if kind == "pixels":
        flat = split.x.flatten(1)
        order = torch.rand(flat.shape, generator=gen).argsort(1).to(flat.device)
        return Split(flat.gather(1, order).view_as(split.x), split.y)
    raise ValueError(f"unknown dataset.corrupt {kind!r} (none, labels, pixels)")


def load(ds_cfg, data_cfg, device) -> Data:
    """Load the dataset of ``ds_cfg`` (:class:`gatelab.core.config.DatasetConfig`) onto ``device``."""
    arrays = load_arrays(ds_cfg.source, data_cfg.root, data_cfg.download)
    classes = list(ds_cfg.classes) if ds_cfg.classes is not None else None
    wanted = classes if ds_cfg.task == "binary" else \
        [c for g in ds_cfg.class_groups for c in g] if ds_cfg.get("class_groups") is not None else []
    present = set(np.unique(arrays["y_train"]).tolist())
    if not set(wanted) <= present:
        key = "classes" if ds_cfg.task == "binary" else "class_groups"
        raise ValueError(f"dataset.{key}: classes {sorted(set(wanted) - present)} are not in {ds_cfg.source}'s "
                         f"labels {sorted(present)}")
    train = _split(arrays["x_train"], arrays["y_train"], ds_cfg, ds_cfg.limit_train, device)
    test = _split(arrays["x_test"], arrays["y_test"], ds_cfg, ds_cfg.limit_test, device)
    if ds_cfg.task != "classification" and ds_cfg.get("corrupt", "none") == "labels":
        raise ValueError("dataset.corrupt=labels draws class labels: it needs task=classification")
    train = corrupt(train, ds_cfg.get("corrupt") or "none", ds_cfg.num_classes)
    shift, div = normalizer(ds_cfg.get("normalize") or "unit", train.x)
    routing = ds_cfg.get("routing")
    if routing is not None and routing.get("features"):  # paper 003 CIFAR: frozen-backbone features
        train, test = _routing_features(routing, data_cfg, train, test)
        shift, div = 0.0, 1.0
    for split in (train, test):
        split.shift, split.div = shift, div
    out_dim = 1 if ds_cfg.task == "binary" else ds_cfg.num_classes
    files = {str(cache_path(ds_cfg.source, data_cfg.root).resolve()): digest(cache_path(ds_cfg.source, data_cfg.root))}
    if routing is not None and routing.get("features"):
        from gatelab.data.backbone import RESNET20_FILE
        net = data_root(data_cfg.root) / (routing.get("backbone") or RESNET20_FILE)
        files[str(net.resolve())] = digest(net)
    return Data(train, test, tuple(train.x.shape[1:]), out_dim, ds_cfg.task, files)


def cut(source: str, root: Optional[str], out_dir: Path, n_train: int, n_test: int) -> Path:
    """A smaller cache file of the same format: the first ``n_train`` / ``n_test`` images of each
    split, balanced over classes (:func:`first_balanced`, the rule of ``dataset.limit_train``), so a
    run with ``dataset.limit_train=n_train`` sees the same images from either file. For a machine
    that receives a limited upload (10,000 + 2,000 CIFAR-10 images: 37 MB instead of 178 MB)."""
    arrays = load_arrays(source, root, download=False)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        idx = first_balanced(arrays[f"y_{split}"], n)
        out[f"x_{split}"], out[f"y_{split}"] = arrays[f"x_{split}"][idx], arrays[f"y_{split}"][idx]
    path = Path(out_dir) / f"{source}.npz"
    _atomic_savez(path, out)
    return path


def main(argv=None) -> None:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m gatelab.data.datasets",
                                 description="Dataset cache files: `cut` writes a smaller one of the same format.")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cut", help="the first N balanced train/test images of <root>/<source>.npz into OUT/<source>.npz")
    c.add_argument("source", choices=sorted(_TORCHVISION))
    c.add_argument("--root", default=None, help="data root (default: $GATELAB_DATA, else ~/.cache/gatelab)")
    c.add_argument("--train", type=int, required=True)
    c.add_argument("--test", type=int, required=True)
    c.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    path = cut(args.source, args.root, args.out, args.train, args.test)
    with np.load(path) as f:
        shapes = {k: f[k].shape for k in KEYS}
    print(f"{path}: {path.stat().st_size / 2**20:.1f} MiB, {shapes}")


if __name__ == "__main__":
    main()
