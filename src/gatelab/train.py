"""The training loop: one run = one (dataset, arch, regime, optimiser, seed) -> ``results.json``.

Per epoch: train loss/accuracy (running mean over the epoch's mini-batches, as Keras reports them
in the paper's code), test loss/accuracy; checkpoints ``ckpt/last.pt``, ``ckpt/best.pt`` (best test
accuracy: the FLNPF source, as in the paper's code) and ``ckpt/epoch_<N>.pt`` for
``checkpoint_epochs`` (0: the initialisation). A non-finite loss stops the run with status
``diverged``; an exception records status ``failed``. Only ``completed`` runs are results.

Seeds of one cell train together (``seeds=[0,1,2,3,4]``): their networks are stacked along a leading
seed dimension (:func:`gatelab.models.stack_models`: batched matmuls, grouped convolutions), each
seed with its own initialisation and data order, exactly as when trained alone; the loss is the sum
of the per-seed mean losses, so each seed gets its own gradient. A single run is the case S = 1.
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
from .models import stack_models, unstack_state
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
    """Mean loss and number correct over the batch dimension (the last before the outputs), per
    seed when outputs are stacked (S, B, ...): cross-entropy for classification; squared loss
    (1/2)(ŷ-y)² with sign accuracy for binary ±1 targets (paper 001 §6.1)."""
    if task == "binary":
        pred = out.squeeze(-1)
        return 0.5 * (pred - y).square().mean(-1), (torch.sign(pred) == y).sum(-1)
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="none").view(y.shape)
    return loss.mean(-1), (out.argmax(-1) == y).sum(-1)


@torch.no_grad()
def evaluate(model, split: data_mod.Split, batch_size: int, task: str, stack: int) -> tuple[list, list]:
    """Per seed (mean loss, accuracy) over a whole split, in large batches."""
    model.eval()
    loss_sum = torch.zeros(stack, device=split.x.device)
    correct = torch.zeros(stack, device=split.x.device, dtype=torch.long)
    for xb, yb in split.batches(batch_size):
        loss, c = objective(model(xb.expand(stack, *xb.shape)), yb.expand(stack, *yb.shape), task)
        loss_sum += loss * len(yb)
        correct += c
    model.train()
    return (loss_sum / len(split)).tolist(), [c / len(split) for c in correct.tolist()]


def _finite_or_none(v: float) -> Optional[float]:
    return v if math.isfinite(v) else None


def git_commit() -> Optional[str]:
    """The short commit of the code that runs (None outside a git checkout)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                              capture_output=True, text=True, timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def environment(device: torch.device) -> dict:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    return {"torch": torch.__version__, "python": platform.python_version(), "device": str(device),
            "device_name": name, "threads": torch.get_num_threads(), "host": platform.node(),
            "git_commit": git_commit()}


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
    """Train one run (``cfg.seed``) into ``run_dir``; returns its results dict (see :func:`train_seeds`)."""
    return train_seeds(cfg, {int(cfg.seed): Path(run_dir)})[int(cfg.seed)]


def train_seeds(cfg, run_dirs: dict) -> dict:
    """Train the seeds ``run_dirs`` maps to run directories, together; write each ``results.json``.

    A seed already completed or diverged in its directory is returned as it is (``skipped``); one
    stopped early resumes from its ``ckpt/last.pt``. Raises (before any training) on a bad config,
    a missing dataset or an unusable FLNPF source; that and any later exception are recorded as
    ``status: failed`` in every seed's results.json before re-raising.
    """
    out, todo = {}, {}
    for seed, run_dir in run_dirs.items():
        done = finished_results(run_dir)
        if done is not None and not cfg.force:
            log.info("%s already %s (best test acc %s); skipped (force=true reruns it)", run_dir, done["status"],
                     done["best_test_acc"])
            out[seed] = {**done, "skipped": True}
        else:
            todo[seed] = Path(run_dir)
    if not todo:
        return out
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    t_start = time.time()
    runs = []
    for seed, run_dir in todo.items():
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg_s = OmegaConf.merge(cfg, {"seed": seed, "seeds": None})
        runs.append(_Run(seed, run_dir, cfg_s, {"version": RESULTS_VERSION, "status": "running", "seed": seed,
                                                 "config": OmegaConf.to_container(cfg_s, resolve=True),
                                                 "history": []}))
    try:
        for r in runs:
            validate(r.cfg)
        device = resolve_device(cfg.device)
        env = environment(device)
        torch.manual_seed(cfg.seed)
        data = data_mod.load(cfg.dataset, cfg.data, device)
        for r in runs:
            r.model, info = regimes.build_model(r.cfg, data.in_shape, data.out_dim)
            r.results.update(env=env, model={**regimes.describe(r.model), **info})
            r.tracker = make_tracker(r.cfg, r.run_dir)
        _fit(cfg, runs, data, device, lambda: [r.write(t_start) for r in runs])
    except BaseException as e:
        for r in runs:
            r.results.update(status="failed", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
        raise
    finally:
        for r in runs:
            r.write(t_start)
            r.tracker.finish(r.results)
            out[r.seed] = r.results
    return out


class _Run:
    """One seed's bookkeeping: config, directory, results dict, single-seed model, tracker."""

    def __init__(self, seed: int, run_dir: Path, cfg, results: dict):
        self.seed, self.run_dir, self.cfg, self.results = seed, run_dir, cfg, results
        self.model, self.tracker = None, NullTracker()
        self.best_acc, self.best_epoch, self.active = -1.0, None, True
        self.ckpt_dir = run_dir / checkpoints.CKPT_DIR

    @property
    def history(self) -> list:
        return self.results["history"]

    def write(self, t_start: float) -> None:
        """results.json as it stands (status ``running`` while training), written atomically."""
        res = self.results
        res["wall_time_s"] = round(res.get("prior_wall_time_s", 0.0) + time.time() - t_start, 3)
        res["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        checkpoints.atomic_write_json(self.run_dir / RESULTS, res)


def _fit(cfg, runs: list[_Run], data, device, save_progress) -> None:
    """The epoch loop over the stacked seeds; fills each run's results in place.

    Seeds stopped early (preempted, killed, failed) resume from their ``ckpt/last.pt``: model,
    optimiser and data-order RNG state are restored, so each ends as if never interrupted. Seeds
    resuming from different epochs train in turn, in groups of equal epoch.
    """
    lasts = {r.seed: _last_checkpoint(r) for r in runs}
    starts = {seed: last["epoch"] + 1 if last else 1 for seed, last in lasts.items()}
    groups = sorted(set(starts.values()))
    if len(groups) > 1:
        for e in groups:
            _fit(cfg, [r for r in runs if starts[r.seed] == e], data, device, save_progress)
        return
    S, task, bs = len(runs), data.task, cfg.optimizer.batch_size
    start = groups[0]
    lasts = [lasts[r.seed] for r in runs] if start > 1 else []
    for r, last in zip(runs, lasts):
        r.model.load_state_dict(last["model"])
    model = stack_models([r.model for r in runs])
    opt = make_optimizer(cfg.optimizer, regimes.trainable_parameters(model))
    gens = [torch.Generator(device=device).manual_seed(r.seed * 1000 + SHUFFLE_STREAM) for r in runs]
    meta = {"arch": OmegaConf.to_container(cfg.arch, resolve=True),
            "regime": OmegaConf.to_container(cfg.regime, resolve=True),
            "dataset": cfg.dataset.name, "in_shape": list(data.in_shape), "out_dim": data.out_dim}
    extra_epochs = set(cfg.checkpoint_epochs)
    t_fit = time.time()
    if start > 1:
        opt.load_state_dict(stack_optimizer_state([last["optimizer"] for last in lasts]))
        for r, g, last in zip(runs, gens, lasts):
            g.set_state(last["shuffle_rng"])
            r.history[:] = last["history"]
            r.best_epoch = max(r.history, key=lambda h: h["test_acc"])["epoch"]  # first of equals, as below
            r.best_acc = r.history[r.best_epoch - 1]["test_acc"]
            r.results.update(resumed_from_epoch=last["epoch"], resumes=last.get("resumes", 0) + 1,
                             prior_wall_time_s=last.get("wall_time_s", 0.0))
            log.info("seed %d: resumed from %s at epoch %d", r.seed, r.ckpt_dir / "last.pt", last["epoch"])
    elif 0 in extra_epochs:  # the initialisation, for kernels over training (Figure 3)
        for r in runs:
            checkpoints.save(r.ckpt_dir / "epoch_0.pt", **meta, seed=r.seed, epoch=0, test_acc=None,
                             model=r.model.state_dict())
    n_train = len(data.train)
    # Speed options (off by default): bf16 autocast; torch.compile of the forward pass (on CUDA,
    # mode="reduce-overhead" captures CUDA graphs, which pays at batch 32 where launches dominate).
    forward = torch.compile(model, mode=cfg.compile) if cfg.compile else model
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.amp)
    model.train()
    for epoch in range(start, cfg.epochs + 1):
        t0 = time.time()
        loss_sum = torch.zeros(S, device=device)
        correct = torch.zeros(S, device=device, dtype=torch.long)
        bar = tqdm(data.train.stacked_batches(bs, gens), total=math.ceil(n_train / bs),
                   desc=f"epoch {epoch}/{cfg.epochs}", leave=False, disable=not cfg.progress, mininterval=1.0)
        for xb, yb in bar:
            with autocast:
                loss, c = objective(forward(xb).float(), yb, task)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()  # seed s's parameters get exactly the gradient of seed s's loss
            opt.step()
            loss_sum += loss.detach() * yb.shape[1]
            correct += c
        train_loss, train_acc = (loss_sum / n_train).tolist(), [c / n_train for c in correct.tolist()]
        test_loss, test_acc = evaluate(model, data.test, cfg.eval_batch_size, task, S)
        seconds = round(time.time() - t0, 3)
        state = model.state_dict()
        opt_state = opt.state_dict()
        for s, r in enumerate(runs):
            if not r.active:
                continue
            if not math.isfinite(train_loss[s]):
                r.active = False
                r.results.update(status="diverged", diverged_epoch=epoch)
                r.history.append({"epoch": epoch, "train_loss": None, "train_acc": train_acc[s],
                                  "test_loss": None, "test_acc": None, "seconds": seconds})
                log.warning("seed %d, epoch %d: training loss is not finite; run stopped as diverged", r.seed, epoch)
                continue
            r.history.append({"epoch": epoch, "train_loss": train_loss[s], "train_acc": train_acc[s],
                              "test_loss": _finite_or_none(test_loss[s]), "test_acc": test_acc[s],
                              "seconds": seconds})
            log.info("seed %d epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  (%.1fs)", r.seed,
                     epoch, cfg.epochs, train_loss[s], train_acc[s], test_loss[s], test_acc[s], seconds)
            ckpt = dict(meta, seed=r.seed, epoch=epoch, test_acc=test_acc[s], model=unstack_state(state, s))
            if test_acc[s] > r.best_acc:
                r.best_acc, r.best_epoch = test_acc[s], epoch
                checkpoints.save(r.ckpt_dir / "best.pt", **ckpt)
            if epoch in extra_epochs:
                checkpoints.save(r.ckpt_dir / f"epoch_{epoch}.pt", **ckpt)
            checkpoints.save(r.ckpt_dir / "last.pt", **ckpt, optimizer=unstack_optimizer_state(opt_state, s),
                             shuffle_rng=gens[s].get_state(), history=r.history, resumes=r.results.get("resumes", 0),
                             wall_time_s=r.results.get("prior_wall_time_s", 0.0) + time.time() - t_fit)
            r.tracker.log(r.history[-1])
        save_progress()
        if not any(r.active for r in runs):
            break
    for r in runs:
        if r.active:
            r.results["status"] = "completed"
        r.results.update(best_test_acc=r.best_acc if r.best_epoch else None, best_epoch=r.best_epoch,
                         final_train_acc=r.history[-1]["train_acc"] if r.history else None)


def _last_checkpoint(r: _Run) -> Optional[dict]:
    """A previous invocation's ``ckpt/last.pt`` to resume from (None: start at epoch 1)."""
    last = r.ckpt_dir / "last.pt"
    return None if r.cfg.force or not last.is_file() else checkpoints.load(last)


def stack_optimizer_state(states: list[dict]) -> dict:
    """One optimiser state dict for stacked parameters from the seeds' own (per-parameter tensors
    stacked; scalars such as Adam's step count, equal across seeds, taken from the first)."""
    stacked = {"param_groups": states[0]["param_groups"], "state": {}}
    for idx, first in states[0]["state"].items():
        stacked["state"][idx] = {k: torch.stack([st["state"][idx][k] for st in states])
                                 if torch.is_tensor(v) and v.dim() > 0 else v for k, v in first.items()}
    return stacked


def unstack_optimizer_state(state: dict, s: int) -> dict:
    """Seed ``s``'s optimiser state dict (as if it had been trained alone)."""
    return {"param_groups": state["param_groups"],
            "state": {idx: {k: v[s].clone() if torch.is_tensor(v) and v.dim() > 0 else v for k, v in st.items()}
                      for idx, st in state["state"].items()}}
