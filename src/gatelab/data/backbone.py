"""The frozen CIFAR-10 feature extractor of paper 003's CIFAR routing task (App. D).

The paper says "ResNet18, first two residual blocks", 512-d; the authors' code loads akamaster's
ResNet-20 (``resnet20-12fca82f.th``, BSD-2-Clause, 91.78% test accuracy with ImageNet mean/std
inputs) and keeps conv1 and stages 1-2 (32 channels at 16×16), average-pooled 4×4 → 512, fed with
raw [0,1] images. ``dataset.routing.features``: ``resnet20`` (raw images, the code) or
``resnet20_imagenet_norm`` (the backbone's own input normalisation). Features of the M rotated
copies are computed once and cached outside git (``$GATELAB_CACHE``, default ~/.cache/gatelab).

Without the published file, :func:`gatelab.papers.routing.backbone_training.train_resnet20` trains one with akamaster's recipe (SGD 0.1,
momentum 0.9, weight decay 1e-4, batch 128, 200 epochs, step size ÷10 at epochs 100 and 150,
random 4-pixel-padded crops and horizontal flips, ImageNet mean/std inputs) and writes it beside a
``<file>.json`` holding its sha256 and test accuracy; ``dataset.routing.backbone=<file>`` uses it.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from gatelab.core import checkpoints

RESNET20_FILE = "resnet20-12fca82f.th"
RESNET20_SHA256 = "12fca82f0bebc4135bf1f32f6e3710e61d5108578464b84fd6d7f5c1b04036c8"
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
FEATURES = ("resnet20", "resnet20_imagenet_norm")


class Block(nn.Module):
    """akamaster's BasicBlock with option-A shortcuts (subsample, zero-pad the new channels)."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.pad = (c_out - c_in) // 2 if stride != 1 or c_in != c_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        short = x if self.pad is None else F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))
        return F.relu(out + short)


class ResNet20(nn.Module):
    """ResNet-20 for CIFAR-10 (He et al. 2016, §4.2), state-dict compatible with akamaster's."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        stages, c = [], 16
        for width, stride in ((16, 1), (32, 2), (64, 2)):
            stages.append(nn.Sequential(*[Block(c if i == 0 else width, width, stride if i == 0 else 1) for i in range(3)]))
            c = width
        self.layer1, self.layer2, self.layer3 = stages
        self.linear = nn.Linear(64, 10)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """conv1 and stages 1-2 (32×16×16), average-pooled 4×4 and flattened: (N, 512)."""
        z = self.layer2(self.layer1(F.relu(self.bn1(self.conv1(x)))))
        return F.avg_pool2d(z, 4).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.layer3(self.layer2(self.layer1(F.relu(self.bn1(self.conv1(x))))))
        return self.linear(F.adaptive_avg_pool2d(z, 1).flatten(1))


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def expected_sha256(path: Path) -> str:
    """The published file's hash, or the one a trained backbone's ``<file>.json`` records."""
    if path.name == RESNET20_FILE:
        return RESNET20_SHA256
    meta = path.with_name(path.name + ".json")
    if not meta.is_file():
        raise FileNotFoundError(f"{meta} is missing: a backbone other than {RESNET20_FILE} must be one that "
                                "`python -m gatelab.papers.routing backbone` trained (it writes that record)")
    return json.loads(meta.read_text())["sha256"]


def check_file(path: Path) -> None:
    """A backbone file whose sha256 is not the published one (or its training record's): FileNotFoundError naming
    the file and what to do. The plan calls it before anything trains, where the file is present."""
    digest, want = sha256(path), expected_sha256(path)
    if digest != want:  # a truncated download, or another file under the name
        raise FileNotFoundError(f"{path} has sha256 {digest[:12]}..., expected {want[:12]}...: the file is corrupt or "
                                "another one; fetch it again (see the data root's README) or point data.root at a good copy")


def load_resnet20(root: Path, name: str = RESNET20_FILE) -> ResNet20:
    """The backbone ``<root>/<name>`` (default the published ``resnet20-12fca82f.th``), its sha256
    checked against the published one or its training record; eval mode."""
    path = Path(root) / name
    if not path.is_file():
        raise FileNotFoundError(
            f"the CIFAR routing task needs the frozen backbone {path} (akamaster/pytorch_resnet_cifar10, "
            f"pretrained_models/{RESNET20_FILE}, sha256 {RESNET20_SHA256}); put it in the data root "
            "(data.root or $GATELAB_DATA, e.g. ../shared/data), or train one with `make routing-backbone` "
            "(GPU: about 200 epochs of ResNet-20) and set dataset.routing.backbone to its file name")
    check_file(path)
    state = torch.load(path, map_location="cpu", weights_only=False)
    state = state.get("state_dict", state)
    net = ResNet20()
    net.load_state_dict({k.removeprefix("module."): v for k, v in state.items()})
    return net.eval()


def _inputs(images: torch.Tensor, kind: str) -> torch.Tensor:
    """uint8 NCHW -> the backbone's input: [0,1] (``resnet20``) or ImageNet-normalised."""
    x = images.float() / 255
    if kind == "resnet20_imagenet_norm":
        dev = x.device
        x = (x - torch.tensor(IMAGENET_MEAN, device=dev).view(1, 3, 1, 1)) / torch.tensor(IMAGENET_STD, device=dev).view(1, 3, 1, 1)
    return x


@torch.no_grad()
def accuracy(net: ResNet20, images: torch.Tensor, labels: torch.Tensor, kind: str, batch: int = 500) -> float:
    """The backbone's own test accuracy on uint8 NCHW images, with the inputs of ``kind``."""
    hits = sum(int((net(_inputs(images[i:i + batch], kind)).argmax(1) == labels[i:i + batch]).sum())
               for i in range(0, len(images), batch))
    return hits / len(images)


@torch.no_grad()
def rotated_features(net: ResNet20, images: torch.Tensor, index: torch.Tensor, kind: str,
                     batch: int = 500) -> torch.Tensor:
    """(N, M, 512) features of every image (uint8 NCHW) under each of the M pixel gathers ``index``
    ((M, 3·H·W) into the flattened image padded with one zero, :func:`gatelab.data.routing_tasks.input_index`)."""
    n, shape = len(images), images.shape[1:]
    out = torch.empty(n, len(index), 512)
    for start in range(0, n, batch):
        flat = images[start:start + batch].flatten(1)
        pad = torch.cat([flat, flat.new_zeros(len(flat), 1)], 1)
        for i, idx in enumerate(index):
            out[start:start + len(flat), i] = net.features(_inputs(pad[:, idx].view(-1, *shape), kind))
    return out


def info_path(name: str = RESNET20_FILE) -> Path:
    """The record of a backbone's test accuracy, written beside the feature cache."""
    return cache_dir() / ("backbone.json" if name == RESNET20_FILE else f"backbone-{name}.json")


def cache_dir() -> Path:
    return Path(os.environ.get("GATELAB_CACHE", Path.home() / ".cache" / "gatelab")).expanduser() / "features"


def feature_code() -> str:
    """A hash of the code that computes the features (this module and the routing tasks' rotations): a change
    to it keys a new cache instead of reading features the old code made."""
    from gatelab.data import routing_tasks
    return hashlib.sha1(Path(__file__).read_bytes() + Path(routing_tasks.__file__).read_bytes()).hexdigest()[:12]


def cached_features(routing_cfg, root, splits: dict, index: torch.Tensor) -> dict:
    """{split: (N, M·512) float32} for ``splits`` {name: (uint8 NCHW images, labels)}, computed
    with the backbone from ``root`` or read from the cache; the backbone's test accuracy (with both
    input conventions) is recorded beside the cache in ``backbone.json``."""
    kind, name = routing_cfg.features, routing_cfg.get("backbone") or RESNET20_FILE
    other = {"backbone": name} if name != RESNET20_FILE else {}  # the published file keeps its old cache keys
    key = hashlib.sha1(json.dumps({"kind": kind, "M": routing_cfg.M, "angle": routing_cfg.max_angle, **other,
                                   "code": feature_code(),  # the code that computes them (issue #56)
                                   "n": {k: int(len(v[0])) for k, v in splits.items()},
                                   "first": {k: hashlib.sha1(v[0].numpy().tobytes()).hexdigest()
                                             for k, v in splits.items()}}, sort_keys=True).encode()).hexdigest()[:12]
    path = cache_dir() / f"cifar10-{kind}-rot{routing_cfg.max_angle:g}-M{routing_cfg.M}-{key}.npz"
    if path.is_file():
        with np.load(path) as f:
            return {k: torch.from_numpy(f[k]) for k in splits}
    net = load_resnet20(root, name)
    feats = {k: rotated_features(net, images, index, kind).flatten(1).numpy() for k, (images, _) in splits.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, **feats)
    os.replace(tmp, path)
    if "test" in splits:
        images, labels = splits["test"]
        info = {"backbone": name, "sha256": expected_sha256(Path(root) / name), "test_images": int(len(images)),
                **{f"test_acc_{k}": accuracy(net, images, labels, k) for k in FEATURES}}
        checkpoints.atomic_write_json(info_path(name), info)
    return {k: torch.from_numpy(v) for k, v in feats.items()}
