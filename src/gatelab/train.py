"""The training loop: one run = one (dataset, arch, regime, optimiser, seed) -> ``results.json``.

Per epoch: train loss/accuracy (running mean over the epoch's mini-batches, as Keras reports them
in the paper's code), test loss/accuracy; checkpoints ``ckpt/last.pt``, ``ckpt/best.pt`` (best test
accuracy: the FLNPF source, as in the paper's code) and ``ckpt/epoch_<N>.pt`` for
``checkpoint_epochs`` (0: the initialisation). A non-finite loss stops the run with status ``diverged``; an exception
records status ``failed``. Only ``completed`` runs are results.
"""
from __future__ import annotations

import json
import logging
import math
import platform
import subprocess
import time
import traceback
from pathlib import Path
from typing import Optional

import torch
import torch.nn.functional as F
from omegaconf import OmegaConf
from tqdm.auto import tqdm

from . import checkpoints, data as data_mod, regimes
from .config import validate
from .tracking import NullTracker, make_tracker

log = logging.getLogger("gatelab")

RESULTS = "results.json"
RESULTS_VERSION = 1
SHUFFLE_STREAM = 1  # the data order of seed s comes from its own generator, independent of init


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device={name} requested but CUDA is not available")
    return dev


def make_optimizer(opt_cfg, params) -> torch.optim.Optimizer:
    """SGD (constant step, momentum 0 by default), Adam, RMSprop; the fused implementation where
    torch has one (about 25% faster per step on the CPU for FC/MNIST), else foreach."""
    params = list(params)
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[opt_cfg.name]
    kw = dict(lr=opt_cfg.lr, weight_decay=opt_cfg.weight_decay)
    if opt_cfg.name != "adam":
        kw["momentum"] = opt_cfg.momentum
    try:
        return cls(params, fused=True, **kw)
    except (TypeError, RuntimeError, ValueError):
        return cls(params, foreach=True, **kw)


def objective(out: torch.Tensor, y: torch.Tensor, task: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss and number correct: cross-entropy for classification; squared loss
    (1/2)(ŷ-y)² with sign accuracy for binary ±1 targets (paper 001 §6.1)."""
    if task == "binary":
        pred = out.squeeze(1)
        return 0.5 * F.mse_loss(pred, y), (torch.sign(pred) == y).sum()
    return F.cross_entropy(out, y), (out.argmax(1) == y).sum()


@torch.no_grad()
def evaluate(model, split: data_mod.Split, batch_size: int, task: str) -> tuple[float, float]:
    """(mean loss, accuracy) over a whole split, in large batches."""
    model.eval()
    loss_sum = torch.zeros((), device=split.x.device)
    correct = torch.zeros((), device=split.x.device, dtype=torch.long)
    for xb, yb in split.batches(batch_size):
        loss, c = objective(model(xb), yb, task)
        loss_sum += loss * len(yb)
        correct += c
    model.train()
    return (loss_sum / len(split)).item(), correct.item() / len(split)


def _finite_or_none(v: float) -> Optional[float]:
    return v if math.isfinite(v) else None


def environment(device: torch.device) -> dict:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                                capture_output=True, text=True, timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"torch": torch.__version__, "python": platform.python_version(), "device": str(device),
            "device_name": name, "threads": torch.get_num_threads(), "host": platform.node(),
            "git_commit": commit}


def read_results(path: Path) -> Optional[dict]:
    """A results.json of this version, or None if absent, truncated or of another version."""
    try:
        res = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return res if isinstance(res, dict) and res.get("version") == RESULTS_VERSION else None


FINAL = ("completed", "diverged")  # re-running these gives the same result: they are skipped


def finished_results(run_dir: Path) -> Optional[dict]:
    res = read_results(Path(run_dir) / RESULTS)
    return res if res is not None and res.get("status") in FINAL else None


def train(cfg, run_dir: Path) -> dict:
    """Train one run and write ``<run_dir>/results.json``; returns the results dict.

    Raises (before any training) on a bad config, a missing dataset or an unusable FLNPF source;
    those and any later exception are recorded as ``status: failed`` before re-raising. A run
    already completed or diverged in ``run_dir`` is returned as it is (``skipped``).
    """
    run_dir = Path(run_dir)
    done = finished_results(run_dir)
    if done is not None and not cfg.force:
        log.info("%s already %s (best test acc %s); skipped (force=true reruns it)", run_dir, done["status"],
                 done["best_test_acc"])
        return {**done, "skipped": True}
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    t_start = time.time()
    results = {"version": RESULTS_VERSION, "status": "running", "seed": int(cfg.seed),
               "config": OmegaConf.to_container(cfg, resolve=True), "history": []}
    tracker = NullTracker()
    try:
        validate(cfg)
        device = resolve_device(cfg.device)
        results["env"] = environment(device)
        torch.manual_seed(cfg.seed)
        data = data_mod.load(cfg.dataset, cfg.data, device)
        model, info = regimes.build_model(cfg, data.in_shape, data.out_dim)
        model.to(device)
        results["model"] = {**regimes.describe(model), **info}
        tracker = make_tracker(cfg, run_dir)

        def progress():
            tracker.log(results["history"][-1])
            _write(run_dir, results, t_start)
        _fit(cfg, model, data, device, run_dir, results, progress)
    except BaseException as e:
        results.update(status="failed", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
        raise
    finally:
        _write(run_dir, results, t_start)
        tracker.finish(results)
    return results


def _write(run_dir: Path, results: dict, t_start: float) -> None:
    """results.json as it stands (status ``running`` while training), written atomically."""
    results["wall_time_s"] = round(results.get("prior_wall_time_s", 0.0) + time.time() - t_start, 3)
    results["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    checkpoints.atomic_write_json(run_dir / RESULTS, results)


def _fit(cfg, model, data, device, run_dir: Path, results: dict, save_progress) -> None:
    """The epoch loop; fills ``results`` in place. Resumes from ``ckpt/last.pt`` when a previous
    invocation of the same run stopped early (preempted, killed, failed): model, optimiser and
    data-order RNG state are restored, so the run ends as if never interrupted."""
    opt = make_optimizer(cfg.optimizer, regimes.trainable_parameters(model))
    shuffle_gen = torch.Generator(device=device).manual_seed(int(cfg.seed) * 1000 + SHUFFLE_STREAM)
    bs, task = cfg.optimizer.batch_size, data.task
    meta = {"arch": OmegaConf.to_container(cfg.arch, resolve=True),
            "regime": OmegaConf.to_container(cfg.regime, resolve=True),
            "dataset": cfg.dataset.name, "in_shape": list(data.in_shape), "out_dim": data.out_dim,
            "seed": int(cfg.seed)}
    ckpt_dir = run_dir / checkpoints.CKPT_DIR
    extra_epochs = set(cfg.checkpoint_epochs)
    history = results["history"]
    best_acc, best_epoch = -1.0, None
    n_train = len(data.train)
    t_fit = time.time()
    start = 1
    if (ckpt_dir / "last.pt").is_file() and not cfg.force:
        last = checkpoints.load(ckpt_dir / "last.pt")
        model.load_state_dict(last["model"])
        opt.load_state_dict(last["optimizer"])
        shuffle_gen.set_state(last["shuffle_rng"])
        history[:] = last["history"]
        start = last["epoch"] + 1
        best_epoch = max(history, key=lambda h: h["test_acc"])["epoch"]  # first of equals, as below
        best_acc = history[best_epoch - 1]["test_acc"]
        results.update(resumed_from_epoch=last["epoch"], resumes=last.get("resumes", 0) + 1,
                       prior_wall_time_s=last.get("wall_time_s", 0.0))
        log.info("resumed from %s at epoch %d", ckpt_dir / "last.pt", last["epoch"])
    elif 0 in extra_epochs:  # the initialisation, for kernels over training (Figure 3)
        checkpoints.save(ckpt_dir / "epoch_0.pt", **meta, epoch=0, test_acc=None, model=model.state_dict())
    model.train()
    for epoch in range(start, cfg.epochs + 1):
        t0 = time.time()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        bar = tqdm(data.train.batches(bs, shuffle_gen, shuffle=True), total=math.ceil(n_train / bs),
                   desc=f"epoch {epoch}/{cfg.epochs}", leave=False, disable=not cfg.progress, mininterval=1.0)
        for xb, yb in bar:
            loss, c = objective(model(xb), yb, task)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * len(yb)
            correct += c
        train_loss, train_acc = (loss_sum / n_train).item(), correct.item() / n_train
        if not math.isfinite(train_loss):
            results.update(status="diverged", diverged_epoch=epoch)
            history.append({"epoch": epoch, "train_loss": None, "train_acc": train_acc,
                            "test_loss": None, "test_acc": None, "seconds": round(time.time() - t0, 3)})
            log.warning("epoch %d: training loss is not finite; run stopped as diverged", epoch)
            break
        test_loss, test_acc = evaluate(model, data.test, cfg.eval_batch_size, task)
        row = {"epoch": epoch, "train_loss": train_loss, "train_acc": train_acc,
               "test_loss": _finite_or_none(test_loss), "test_acc": test_acc,
               "seconds": round(time.time() - t0, 3)}
        history.append(row)
        log.info("epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  (%.1fs)", epoch, cfg.epochs,
                 train_loss, train_acc, test_loss, test_acc, row["seconds"])
        state = dict(meta, epoch=epoch, test_acc=test_acc, model=model.state_dict())
        if test_acc > best_acc:
            best_acc, best_epoch = test_acc, epoch
            checkpoints.save(ckpt_dir / "best.pt", **state)
        if epoch in extra_epochs:
            checkpoints.save(ckpt_dir / f"epoch_{epoch}.pt", **state)
        checkpoints.save(ckpt_dir / "last.pt", **state, optimizer=opt.state_dict(),
                         shuffle_rng=shuffle_gen.get_state(), history=history, resumes=results.get("resumes", 0),
                         wall_time_s=results.get("prior_wall_time_s", 0.0) + time.time() - t_fit)
        save_progress()
    else:
        results["status"] = "completed"
    results.update(best_test_acc=best_acc if best_epoch else None, best_epoch=best_epoch,
                   final_train_acc=history[-1]["train_acc"] if history else None)
