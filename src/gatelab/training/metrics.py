"""What a step optimises and what an epoch records: per-example loss and hits, the stacked
objective, evaluation over a split, and a routing net's pair metrics (paper 003)."""
from __future__ import annotations

import contextlib
from typing import Optional

import torch
import torch.nn.functional as F

from gatelab.data.datasets import Split

ROUTING_TRAIN_SUBSET = 1000  # the fixed training examples (the first ones) a routing net is scored on


def pointwise(out: torch.Tensor, y: torch.Tensor, task: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss and hit (0/1) of every prediction: ``out`` (..., C) against class labels ``y`` (...):
    cross-entropy (``classification``) or the squared error ½‖onehot(y) − out‖² (``classification_l2``,
    the loss of paper 003's theory); the hit is argmax(out) == y."""
    if task == "classification_l2":
        loss = 0.5 * (out - F.one_hot(y, out.shape[-1]).to(out.dtype)).square().sum(-1)
    else:
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="none").view(y.shape)
    return loss, (out.argmax(-1) == y).float()


def objective(out: torch.Tensor, y: torch.Tensor, task: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss and number correct over the batch dimension (the last before the outputs), per
    seed when outputs are stacked (S, B, ...): cross-entropy for classification (squared error on
    one-hot targets for ``classification_l2``); squared loss (1/2)(ŷ-y)² with sign accuracy for
    binary ±1 targets (paper 001 §6.1). With P outputs per example (routing nets: (S, B, P, C)) the
    loss is averaged over the batch and the pairs, and an example counts as the fraction of its
    pairs predicted right."""
    if task == "binary":
        pred = out.squeeze(-1)
        return 0.5 * (pred - y).square().mean(-1), (torch.sign(pred) == y).sum(-1).float()
    if out.dim() == y.dim() + 2:  # P predictions per example (a routing net's trained pairs): (..., B, P, C)
        loss, hit = pointwise(out, y[..., None].expand(out.shape[:-1]), task)
        return loss.mean(-1).mean(-1), hit.mean(-1).sum(-1)
    loss, hit = pointwise(out, y, task)
    return loss.mean(-1), hit.sum(-1)


def eval_chunk(model, batch_size: int, stack: int) -> int:
    """Examples per evaluation batch: ``eval_batch_size`` shared by the ``stack`` nets (twice as many
    networks when each has a feature network), so that the activations in memory stay those of one
    ``eval_batch_size`` batch of one network. Measured: a GCONV row's FRNPF family (6 nets with their
    feature nets) at 2048 CIFAR images a batch grew to 23.7 GB and was killed by the OOM killer."""
    nets = stack * (2 if getattr(model, "feature", None) is not None else 1)
    return max(1, batch_size // nets)


@torch.no_grad()
def evaluate(model, split: Split, batch_size: int, task: str, stack: int, bf16: bool = False,
             tick=None) -> tuple[list, list]:
    """Per seed (mean loss, accuracy) over a whole split, in batches of :func:`eval_chunk` examples;
    ``bf16``: the forward under bf16 autocast (``eval_precision=bf16``), the loss on its outputs in fp32; ``tick(i,
    n)`` after each batch (:class:`gatelab.training.heartbeat.Ticker`: a line every 30 s without progress bars)."""
    model.eval()
    device = split.x.device
    loss_sum = torch.zeros(stack, device=device)
    correct = torch.zeros(stack, device=device)
    chunk = eval_chunk(model, batch_size, stack)
    for i, (xb, yb) in enumerate(split.batches(chunk), 1):
        with torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            out = model(xb.expand(stack, *xb.shape))
        loss, c = objective(out.float(), yb.expand(stack, *yb.shape), task)
        loss_sum += loss * len(yb)
        correct += c
        if tick is not None:
            tick(i, -(-len(split) // chunk))
    model.train()
    return (loss_sum / len(split)).tolist(), [c / len(split) for c in correct.tolist()]



@torch.no_grad()
def pair_metrics(model, split, batch: int, limit: Optional[int] = None, task: str = "classification") -> dict:
    """Per seed: mean loss and accuracy over the trained and the untrained pairs of a split (its
    first ``limit`` examples), every pair computed (per-seed lists)."""
    model.eval()
    s = model.stack or 1
    mask = model.mask if model.stack is not None else model.mask[None]  # (S, M, M)
    sums = {k: torch.zeros(s, dtype=torch.float64, device=mask.device) for k in ("lt", "at", "lu", "au")}
    n = min(len(split), limit or len(split))
    for start in range(0, n, batch):
        xb = split.scale(split.x[start:min(n, start + batch)])
        yb = split.y[start:min(n, start + batch)]
        out = model.all_pairs(xb.expand(s, *xb.shape))  # (S, B, M, M, c)
        y = yb.view(1, -1, 1, 1).expand(*out.shape[:-1])
        loss, hit = (t.double() for t in pointwise(out, y, task))
        tm = mask[:, None].double()
        sums["lt"] += (loss * tm).sum((1, 2, 3))
        sums["at"] += (hit * tm).sum((1, 2, 3))
        sums["lu"] += (loss * (1 - tm)).sum((1, 2, 3))
        sums["au"] += (hit * (1 - tm)).sum((1, 2, 3))
    model.train()
    trained = mask.flatten(1).sum(1).double() * n
    untrained = (~mask).flatten(1).sum(1).double() * n
    none = torch.where(untrained > 0, untrained, torch.nan)  # K = M: no untrained pair, NaN (null in results)
    res = {"trained_loss": sums["lt"] / trained, "trained_acc": sums["at"] / trained,
           "untrained_loss": sums["lu"] / none, "untrained_acc": sums["au"] / none}
    return {k: v.tolist() for k, v in res.items()}


def extra_metrics(cfg, model, data, stack: int) -> list[dict]:
    """Per seed, the metrics an epoch records beyond train/test loss and accuracy: for a routing
    net (paper 003), loss and accuracy on the untrained pairs of the test set, and on the trained
    and untrained pairs of a fixed training subset (every pair computed)."""
    if not hasattr(model, "all_pairs"):
        return [{} for _ in range(stack)]
    batch = max(1, cfg.eval_batch_size // model.spec["m"])
    test = pair_metrics(model, data.test, batch, task=data.task)
    train = pair_metrics(model, data.train, batch, ROUTING_TRAIN_SUBSET, data.task)
    return [{"test_untrained_loss": test["untrained_loss"][s], "test_untrained_acc": test["untrained_acc"][s],
             "train_trained_loss": train["trained_loss"][s], "train_trained_acc": train["trained_acc"][s],
             "train_untrained_loss": train["untrained_loss"][s], "train_untrained_acc": train["untrained_acc"][s]}
            for s in range(stack)]

