"""Training a ResNet-20 backbone for paper 003's CIFAR task when the published file is absent.

akamaster's recipe (SGD 0.1, momentum 0.9, weight decay 1e-4, batch 128, 200 epochs, step size ÷10
at ½ and ¾ of the epochs, random 4-pixel-padded crops and horizontal flips, ImageNet mean/std
inputs); the network and its use as a frozen feature extractor are :mod:`gatelab.data.backbone`.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from gatelab.core import checkpoints
from gatelab.data import datasets as data_mod
from gatelab.data.backbone import FEATURES, ResNet20, _inputs, accuracy, sha256


def crop_flip(images: torch.Tensor, gen: torch.Generator, pad: int = 4) -> torch.Tensor:
    """akamaster's augmentation for a batch (uint8 NCHW, on its device, no per-image Python): a
    random HxW crop of the image zero-padded by ``pad`` on each side, then a horizontal flip with
    probability ½; ``gen`` lives on the images' device."""
    n, _, h, w = images.shape
    dev = images.device
    padded = F.pad(images, (pad, pad, pad, pad))
    dy, dx = (torch.randint(0, 2 * pad + 1, (2, n), generator=gen, device=dev))
    flip = torch.rand(n, generator=gen, device=dev) < 0.5
    cols = torch.arange(w, device=dev)
    cols = torch.where(flip[:, None], w - 1 - cols, cols) + dx[:, None]  # (n, w)
    rows = torch.arange(h, device=dev)[None] + dy[:, None]  # (n, h)
    batch = torch.arange(n, device=dev)[:, None, None]
    return padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)


def train_resnet20(root: Path, out: Path, epochs: int = 200, batch: int = 128, lr: float = 0.1,
                   device: str = "cpu", seed: int = 0, limit_train: Optional[int] = None,
                   limit_test: Optional[int] = None, log=print) -> dict:
    """Train a ResNet-20 on CIFAR-10 from ``root`` with akamaster's recipe (module docstring; the
    milestones at ½ and ¾ of ``epochs``), write its state dict to ``out`` (akamaster's layout) and
    ``<out>.json`` (sha256, recipe, test accuracy with both input conventions, per-epoch history)."""
    arrays = data_mod.load_arrays("cifar10", str(root), download=False)
    dev = torch.device(device)
    pick = {k: data_mod.first_balanced(arrays[f"y_{k}"], n) for k, n in (("train", limit_train), ("test", limit_test))}
    x = {k: torch.from_numpy(arrays[f"x_{k}"][i]).permute(0, 3, 1, 2).contiguous().to(dev) for k, i in pick.items()}
    y = {k: torch.from_numpy(arrays[f"y_{k}"][i].astype(np.int64)).to(dev) for k, i in pick.items()}
    torch.manual_seed(seed)
    net = ResNet20().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    milestones = [math.ceil(epochs / 2), math.ceil(3 * epochs / 4)]
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones, 0.1)
    gen = torch.Generator(dev).manual_seed(seed)
    n, history, t0 = len(y["train"]), [], time.time()
    for epoch in range(1, epochs + 1):
        net.train()
        order = torch.randperm(n, generator=gen, device=dev)
        loss_sum = torch.zeros((), device=dev)
        for start in range(0, n, batch):
            idx = order[start:start + batch]
            out_ = net(_inputs(crop_flip(x["train"][idx], gen), "resnet20_imagenet_norm"))
            loss = F.cross_entropy(out_, y["train"][idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * len(idx)
        sched.step()
        net.eval()
        acc = accuracy(net, x["test"], y["test"], "resnet20_imagenet_norm")
        history.append({"epoch": epoch, "train_loss": float(loss_sum) / n, "test_acc": acc,
                        "seconds": round(time.time() - t0, 1)})
        log(f"backbone epoch {epoch}/{epochs}: train loss {history[-1]['train_loss']:.4f}, test acc {acc:.4f}")
    out = Path(out)
    state = {"best_prec1": 100 * history[-1]["test_acc"],
             "state_dict": {f"module.{k}": v.cpu() for k, v in net.state_dict().items()}}
    checkpoints.atomic_write_bytes(out, lambda tmp: torch.save(state, tmp))
    info = {"file": out.name, "sha256": sha256(out), "recipe": {"epochs": epochs, "batch": batch, "lr": lr,
            "momentum": 0.9, "weight_decay": 1e-4, "milestones": milestones, "augment": "crop 4 + flip",
            "inputs": "resnet20_imagenet_norm", "seed": seed, "limit_train": limit_train},
            "device": str(dev), "test_images": len(y["test"]),
            **{f"test_acc_{k}": accuracy(net, x["test"], y["test"], k) for k in FEATURES}, "history": history}
    checkpoints.atomic_write_json(out.with_name(out.name + ".json"), info)
    return info


