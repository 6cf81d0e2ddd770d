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

import contextlib
import fcntl
import logging
import math
import time
import traceback
from pathlib import Path
from typing import Optional

import torch
import torch.nn.functional as F
from omegaconf import OmegaConf
from tqdm.auto import tqdm

from . import checkpoints, data as data_mod, pruning, regimes
from .config import ConfigError, validate
from .models import stack_models, unstack_state
from .results import RESULTS, RESULTS_VERSION, environment, finished_results, resolve_device
from .runs import plain, run_dir as run_dir_of
from .tracking import NullTracker, make_tracker

log = logging.getLogger("gatelab")

FUSED_DEVICES = ("cpu", "cuda")  # where torch's fused Adam/SGD kernels run
SHUFFLE_STREAM = 1  # the data order of seed s comes from its own generator, independent of init


def make_optimizer(opt_cfg, params) -> torch.optim.Optimizer:
    """SGD (constant step, momentum 0 by default), Adam, RMSprop; the fused implementation where
    torch has one for the parameters' device (CPU, CUDA; about 25% faster per step on the CPU for
    FC/MNIST), else foreach."""
    params = list(params)
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[opt_cfg.name]
    kw = dict(lr=opt_cfg.lr, weight_decay=opt_cfg.weight_decay)
    if opt_cfg.name != "adam":
        kw["momentum"] = opt_cfg.momentum
    if not all(p.device.type in FUSED_DEVICES for p in params):
        return cls(params, foreach=True, **kw)
    try:
        return cls(params, fused=True, **kw)
    except (TypeError, RuntimeError, ValueError):
        return cls(params, foreach=True, **kw)


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


@torch.no_grad()
def evaluate(model, split: data_mod.Split, batch_size: int, task: str, stack: int) -> tuple[list, list]:
    """Per seed (mean loss, accuracy) over a whole split, in large batches."""
    model.eval()
    loss_sum = torch.zeros(stack, device=split.x.device)
    correct = torch.zeros(stack, device=split.x.device)
    for xb, yb in split.batches(batch_size):
        loss, c = objective(model(xb.expand(stack, *xb.shape)), yb.expand(stack, *yb.shape), task)
        loss_sum += loss * len(yb)
        correct += c
    model.train()
    return (loss_sum / len(split)).tolist(), [c / len(split) for c in correct.tolist()]


def _finite_or_none(v: float) -> Optional[float]:
    return v if math.isfinite(v) else None


def train(cfg, run_dir: Path) -> dict:
    """Train one run (``cfg.seed``) into ``run_dir``; returns its results dict (see :func:`train_seeds`)."""
    return train_seeds(cfg, {int(cfg.seed): Path(run_dir)})[int(cfg.seed)]


def prerequisite(cfg) -> tuple:
    """(config, name) of the run that this run is made from, trained first when it is missing: the
    ReLU run of an FLNPF run with ``regime.source=auto``, the previous round of an IMP round; else
    (None, None)."""
    if regimes.needs_source(cfg) and cfg.regime.source == "auto":
        return regimes.relu_twin(cfg), "the ReLU source run"
    if pruning.active(cfg):
        r = cfg.imp.round - 1
        return pruning.parent(cfg), f"IMP round {r}" if r else "the dense run (IMP round 0)"
    return None, None


def train_runs(cfg, run_dirs: dict) -> dict:
    """What ``python run.py`` does: :func:`train_seeds` (all seeds stacked, or one after another with
    ``stack_seeds=false``), after training the :func:`prerequisite` runs that are missing (the same
    cell and seeds), or reusing them."""
    if not cfg.stack_seeds and len(run_dirs) > 1:
        return {s: r for seed, d in run_dirs.items() for s, r in train_runs(cfg, {seed: d}).items()}
    _train_prerequisites(cfg, run_dirs)
    return train_seeds(cfg, run_dirs)


def _train_prerequisites(cfg, run_dirs: dict) -> None:
    """Train the :func:`prerequisite` runs of ``run_dirs``'s seeds that are missing; reuse the others."""
    first, what = prerequisite(cfg)
    if first is not None:
        first_dirs = {s: run_dir_of(OmegaConf.merge(first, {"seed": s, "seeds": None})) for s in run_dirs}
        missing = {s: d for s, d in first_dirs.items() if finished_results(d) is None}
        for s, d in first_dirs.items():
            if s not in missing:
                log.info("seed %d: reusing %s %s", s, what, d)
        if missing:
            log.info("seeds %s: %s is missing; training it first in %s", sorted(missing), what,
                     ", ".join(map(str, missing.values())))
            done = train_runs(first, missing)
            bad = {s: r["status"] for s, r in done.items() if r["status"] != "completed"}
            if bad:
                raise RuntimeError(f"{what} of seeds {bad} did not complete; {cfg.regime.name} cannot start")


# Regime fields that make two regimes' networks run the same forward pass and train the same
# parameters: such regimes (frnpf_ii and frnpf_di, say) can be stacked like seeds.
FAMILY = ("tied", "gate", "beta", "eps", "feature_act", "feature_trainable", "value_trainable")


def family(cfg) -> tuple:
    """The stacking family of a run's regime; FLNPF-like regimes (a trained source) come last."""
    return (regimes.needs_source(cfg),) + tuple(plain(cfg.regime)[k] for k in FAMILY)


def train_row(cfg) -> dict:
    """``regimes=[...]`` and/or ``lrs=[...]`` (with ``seeds=[...]``): every regime × step size × seed
    of a table row in one process. Nets whose regimes share a :func:`family` train stacked (as seeds
    do), each with its own step size (SGD), each into the run directory its single run would use,
    so the two paths skip each other's finished runs. FLNPF trains after its ReLU sources.
    Returns {(regime, lr, seed): results}."""
    validate_row(cfg)
    entries = regimes.row_configs(cfg)
    groups: dict = {}
    for key, c in entries:
        groups.setdefault(family(c), []).append((key, c))
    out = {}
    for fam in sorted(groups, key=lambda f: f[0]):  # stable: the row's order, sourced regimes last
        group = groups[fam]
        for _, c in group:
            _train_prerequisites(c, {int(c.seed): run_dir_of(c)})
        results = train_entries([(c, run_dir_of(c)) for _, c in group])
        out.update(zip([key for key, _ in group], results))
    return out


def validate_row(cfg) -> None:
    """A row's step sizes: per-net step sizes are exact for plain SGD only."""
    lrs = list(cfg.get("lrs") or [])
    if any(not lr > 0 for lr in lrs):
        raise ConfigError(f"lrs={lrs}: step sizes must be > 0")
    if len(set(lrs)) > 1 and not (cfg.optimizer.name == "sgd" and cfg.optimizer.momentum == 0
                                  and cfg.optimizer.weight_decay == 0):
        raise ConfigError("lrs=[...] trains each net with its own step size by scaling its gradient, which is "
                          "exact for plain SGD only (optimizer=sgd, momentum=0, weight_decay=0); sweep "
                          "optimizer.lr with -m instead")


def train_seeds(cfg, run_dirs: dict) -> dict:
    """Train the seeds ``run_dirs`` maps to run directories, together; write each ``results.json``.

    A seed already completed or diverged in its directory is returned as it is (``skipped``); one
    stopped early resumes from its ``ckpt/last.pt``. Raises (before any training) on a bad config,
    a missing dataset or an unusable FLNPF source; that and any later exception are recorded as
    ``status: failed`` in every seed's results.json before re-raising. A run directory is locked
    while it trains, so two processes never train the same run at once.
    """
    seeds = list(run_dirs)
    entries = [(OmegaConf.merge(cfg, {"seed": seed, "seeds": None}), Path(run_dirs[seed])) for seed in seeds]
    return dict(zip(seeds, train_entries(entries)))


def train_entries(entries: list) -> list:
    """Train the runs ``entries`` [(config, run directory)] together (stacked); their results, in
    order. See :func:`train_seeds`."""
    with _locked([d for _, d in entries]):
        out, todo = [None] * len(entries), []
        for i, (c, run_dir) in enumerate(entries):
            done = finished_results(run_dir)
            if done is not None and not c.force:
                log.info("%s already %s (best test acc %s); skipped (force=true reruns it)", run_dir,
                         done["status"], done["best_test_acc"])
                out[i] = {**done, "skipped": True}
            else:
                todo.append(i)
        if todo:
            for i, res in zip(todo, _train_todo([entries[i] for i in todo])):
                out[i] = res
    return out


@contextlib.contextmanager
def _locked(run_dirs):
    """Exclusive ``<run>/.lock`` on every run directory (in sorted order, so no two jobs deadlock)."""
    with contextlib.ExitStack() as stack:
        for d in sorted(Path(d) for d in run_dirs):
            d.mkdir(parents=True, exist_ok=True)
            f = stack.enter_context(open(d / ".lock", "w"))
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _train_todo(entries: list) -> list:
    """Build, resume and train the runs ``entries`` [(config, run directory)]; see :func:`train_seeds`.
    Settings shared by the stack (data, epochs, batch size, device) come from the first config."""
    cfg = entries[0][0]
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    t_start = time.time()
    runs = [_Run(int(c.seed), Path(run_dir), c, t_start) for c, run_dir in entries]
    try:
        for r in runs:  # bad input fails here, before the data is loaded
            validate(r.cfg)
            r.source = regimes.source_path(r.cfg)
            if pruning.active(r.cfg):
                pruning.parent_dir(r.cfg)
        device = resolve_device(cfg.device)
        env = {**environment(device), **precision(cfg, device)}
        torch.manual_seed(cfg.seed)
        data = data_mod.load(cfg.dataset, cfg.data, device)
        for r in runs:
            r.build(data, env)
        # Runs resuming from different epochs train in turn, in groups of equal start epoch.
        starts = [r.start_epoch() for r in runs]
        for start in sorted(set(starts)):
            group = [r for r, st in zip(runs, starts) if st == start]
            _fit(cfg, group, data, device, start, lambda: [r.write() for r in runs])
    except BaseException as e:
        for r in runs:
            r.fail(e)
        raise
    finally:
        for r in runs:
            r.write()
            r.tracker.finish(r.results)
    return [r.results for r in runs]


class _Run:
    """One seed's run: its config, directory, single-seed model and tracker, and the only writer of
    its results (results.json) and checkpoints."""

    def __init__(self, seed: int, run_dir: Path, cfg, t_start: float):
        self.seed, self.run_dir, self.cfg, self.t_start = seed, run_dir, cfg, t_start
        self.results = {"version": RESULTS_VERSION, "status": "running", "seed": seed, "config": plain(cfg),
                        "history": []}
        self.model, self.tracker, self.last, self.source, self.mask = None, NullTracker(), None, None, None
        self.best_acc, self.best_epoch, self.active = -1.0, None, True
        self.best_state, self.best_saved = None, True  # the best epoch's weights until best.pt is written
        self.ckpt_dir = run_dir / checkpoints.CKPT_DIR

    @property
    def history(self) -> list:
        return self.results["history"]

    def build(self, data, env: dict) -> None:
        """The model at initialisation (an FLNPF source is loaded and checked here), the tracker, and
        the ``ckpt/last.pt`` of an earlier invocation to resume from."""
        self.model, info = regimes.build_model(self.cfg, data.in_shape, data.out_dim, self.source)
        if pruning.active(self.cfg):  # an IMP round: the initialisation with the pruned weights zeroed
            self.mask = pruning.make_mask(self.cfg)
            pruning.apply_(self.model, self.mask)
            checkpoints.save(self.run_dir / pruning.MASK_FILE, mask=self.mask, imp=plain(self.cfg.imp))
            info["pruned_fraction"] = 1 - sum(int(m.sum()) for m in self.mask.values()) / \
                sum(m.numel() for m in self.mask.values())
        self.results.update(env=env, model={**regimes.describe(self.model), **info})
        self.tracker = make_tracker(self.cfg, self.run_dir)
        last = self.ckpt_dir / "last.pt"
        self.last = None if self.cfg.force or not last.is_file() else checkpoints.load(last)

    def start_epoch(self) -> int:
        return self.last["epoch"] + 1 if self.last else 1

    def resume(self) -> None:
        """Restore the model, history and best epoch of ``last.pt`` (the optimiser and the data-order
        RNG are restored by the caller, who holds them stacked)."""
        last = self.last
        self.model.load_state_dict(last["model"])
        self.history[:] = last["history"]
        self.best_epoch = max(self.history, key=lambda h: h["test_acc"])["epoch"]  # first of equals, as below
        self.best_acc = self.history[self.best_epoch - 1]["test_acc"]
        self.results.update(resumed_from_epoch=last["epoch"], resumes=last.get("resumes", 0) + 1,
                            prior_wall_time_s=last.get("wall_time_s", 0.0))
        log.info("seed %d: resumed from %s at epoch %d", self.seed, self.ckpt_dir / "last.pt", last["epoch"])

    def record(self, epoch: int, m: dict, seconds: float, model_state) -> None:
        """Record one epoch's metrics ``m`` (train/test loss/acc); stop as diverged on a non-finite
        training loss. ``model_state()`` gives this run's weights, kept (on the device) when best."""
        if not math.isfinite(m["train_loss"]):
            self.active = False
            self.results.update(status="diverged", diverged_epoch=epoch)
            self.history.append({"epoch": epoch, "train_loss": None, "train_acc": m["train_acc"],
                                 "test_loss": None, "test_acc": None, "seconds": seconds})
            log.warning("seed %d, epoch %d: training loss is not finite; run stopped as diverged", self.seed, epoch)
            return
        extra = {k: _finite_or_none(v) for k, v in m.items() if k not in ("train_loss", "train_acc", "test_loss", "test_acc")}
        self.history.append({"epoch": epoch, "train_loss": m["train_loss"], "train_acc": m["train_acc"],
                             "test_loss": _finite_or_none(m["test_loss"]), "test_acc": m["test_acc"],
                             **extra, "seconds": seconds})
        log.info("%s seed %d epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  (%.1fs)",
                 self.cfg.regime.name, self.seed, epoch, self.cfg.epochs, m["train_loss"], m["train_acc"],
                 m["test_loss"], m["test_acc"], seconds)
        if m["test_acc"] > self.best_acc:
            self.best_acc, self.best_epoch = m["test_acc"], epoch
            self.best_state, self.best_saved = model_state(), False
        self.tracker.log(self.history[-1])

    def save_checkpoints(self, writer: checkpoints.Writer, meta: dict, model_state, opt_state, shuffle_rng,
                         t_fit: float) -> None:
        """After a recorded epoch: ``epoch_<N>.pt`` if asked for; every ``checkpoint_every`` epochs and
        at the last, ``best.pt`` (if it changed) and ``last.pt`` (with optimiser and data-order RNG)."""
        h = self.history[-1]
        epoch, every = h["epoch"], self.cfg.checkpoint_every
        ckpt = dict(meta, seed=self.seed, epoch=epoch, test_acc=h["test_acc"])
        if epoch in self.cfg.checkpoint_epochs:
            writer.save(self.ckpt_dir / f"epoch_{epoch}.pt", **ckpt, model=model_state())
        if epoch % every and epoch != self.cfg.epochs:
            return
        if not self.best_saved:
            writer.save(self.ckpt_dir / "best.pt", **dict(ckpt, epoch=self.best_epoch, test_acc=self.best_acc),
                        model=self.best_state)
            self.best_saved = True
        writer.save(self.ckpt_dir / "last.pt", **ckpt, model=model_state(), optimizer=opt_state(),
                    shuffle_rng=shuffle_rng, history=list(self.history), resumes=self.results.get("resumes", 0),
                    wall_time_s=self.results.get("prior_wall_time_s", 0.0) + time.time() - t_fit)

    def finish(self) -> None:
        if self.active:
            self.results["status"] = "completed"
        self.results.update(best_test_acc=self.best_acc if self.best_epoch else None, best_epoch=self.best_epoch,
                            final_train_acc=self.history[-1]["train_acc"] if self.history else None)

    def fail(self, e: BaseException) -> None:
        self.results.update(status="failed", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())

    def write(self) -> None:
        """results.json as it stands (status ``running`` while training), written atomically."""
        res = self.results
        res["wall_time_s"] = round(res.get("prior_wall_time_s", 0.0) + time.time() - self.t_start, 3)
        res["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        checkpoints.atomic_write_json(self.run_dir / RESULTS, res)


def _fit(cfg, runs: list[_Run], data, device, start: int, save_progress) -> None:
    """The epoch loop of runs that start at the same epoch, their networks stacked along a seed
    dimension; a resumed run continues exactly as if it had never been interrupted."""
    model, opt, gens = _setup(cfg, runs, device, start)
    meta = {"arch": plain(cfg.arch), "regime": plain(cfg.regime), "dataset": cfg.dataset.name,
            "in_shape": list(data.in_shape), "out_dim": data.out_dim}
    if start == 1 and 0 in cfg.checkpoint_epochs:  # the initialisation, for kernels over training (Figure 3)
        for r in runs:
            checkpoints.save(r.ckpt_dir / "epoch_0.pt", **meta, seed=r.seed, epoch=0, test_acc=None,
                             model=r.model.state_dict())
    steps = set(cfg.get("checkpoint_steps") or [])
    per_epoch = math.ceil(len(data.train) / cfg.optimizer.batch_size)

    def snapshot(step: int, epoch: int) -> None:  # ckpt/step_<t>.pt: the weights after t optimiser steps
        state = model.state_dict()
        for s, r in enumerate(runs):
            if r.active:
                writer.save(r.ckpt_dir / f"step_{step}.pt", **meta, seed=r.seed, step=step, epoch=epoch,
                            model=unstack_state(state, s))
    # Speed options (off by default): bf16 autocast; torch.compile of the forward pass (on CUDA,
    # mode="reduce-overhead" captures CUDA graphs, which pays at batch 32 where launches dominate).
    forward = torch.compile(model, mode=cfg.compile) if cfg.compile else model
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bool(cfg.amp) or cfg.get("precision") == "bf16")
    t_fit, n_train, writer = time.time(), len(data.train), checkpoints.Writer()
    try:
        if start == 1 and 0 in steps:
            snapshot(0, 0)
        for epoch in range(start, cfg.epochs + 1):
            t0 = time.time()
            # One pass over the training data, every seed in its own order; sums stay on the device.
            base = (epoch - 1) * per_epoch  # optimiser steps before this epoch
            at = {t - base: t for t in steps if base < t <= base + per_epoch}
            loss_sum, correct = _train_epoch(cfg, forward, opt, data, gens, autocast, epoch,
                                             lambda i: snapshot(at[i], epoch) if i in at else None)
            # Evaluation on the test set; the epoch's one host sync brings both back.
            test_loss, test_acc = evaluate(model, data.test, cfg.eval_batch_size, data.task, len(runs))
            extra = extra_metrics(cfg, model, data, len(runs))
            train_loss, train_acc = (loss_sum / n_train).tolist(), [c / n_train for c in correct.tolist()]
            seconds = round(time.time() - t0, 3)
            # Each run records its epoch, then writes its checkpoints on the writer's thread.
            state, opt_state = model.state_dict(), opt.state_dict()
            for s, r in enumerate(runs):
                if not r.active:
                    continue
                r.record(epoch, {"train_loss": train_loss[s], "train_acc": train_acc[s], "test_loss": test_loss[s],
                                 "test_acc": test_acc[s], **extra[s]}, seconds, lambda: unstack_state(state, s))
                if r.active:
                    r.save_checkpoints(writer, meta, lambda: unstack_state(state, s),
                                       lambda: unstack_optimizer_state(opt_state, s, r.cfg.optimizer.lr),
                                       gens[s].get_state(), t_fit)
            # results.json of every run, once per epoch.
            save_progress()
            if not any(r.active for r in runs):
                break
    finally:
        writer.close()
    for r in runs:
        r.finish()


def precision(cfg, device: torch.device) -> dict:
    """Set the arithmetic of ``precision`` (fp32: TF32 off for CUDA matmuls and cuDNN, which
    otherwise runs convolutions in TF32 by default; tf32: on; bf16: fp32 flags, bf16 autocast of
    the forward) and cuDNN autotuning for conv nets on CUDA; returns what ran, for ``env``."""
    kind = "bf16" if cfg.amp else str(cfg.get("precision") or "fp32")
    tf32 = kind == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = device.type == "cuda" and bool(cfg.arch.conv_channels)
    return {"precision": kind, "autocast": "bf16" if kind == "bf16" else None,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


ROUTING_TRAIN_SUBSET = 1000  # the fixed training examples (the first ones) a routing net is scored on


def extra_metrics(cfg, model, data, stack: int) -> list[dict]:
    """Per seed, the metrics an epoch records beyond train/test loss and accuracy: for a routing
    net (paper 003), loss and accuracy on the untrained pairs of the test set, and on the trained
    and untrained pairs of a fixed training subset (every pair computed)."""
    if not hasattr(model, "all_pairs"):
        return [{} for _ in range(stack)]
    from .routing import pair_metrics
    batch = max(1, cfg.eval_batch_size // model.spec["m"])
    test = pair_metrics(model, data.test, batch, task=data.task)
    train = pair_metrics(model, data.train, batch, ROUTING_TRAIN_SUBSET, data.task)
    return [{"test_untrained_loss": test["untrained_loss"][s], "test_untrained_acc": test["untrained_acc"][s],
             "train_trained_loss": train["trained_loss"][s], "train_trained_acc": train["trained_acc"][s],
             "train_untrained_loss": train["untrained_loss"][s], "train_untrained_acc": train["untrained_acc"][s]}
            for s in range(stack)]


def _setup(cfg, runs: list[_Run], device: torch.device, start: int):
    """The stacked model on ``device`` (resumed runs from their last.pt), its optimiser (state on the
    parameters' device, also when resumed from a checkpoint written on another device) and one CPU
    data-order generator per seed (:meth:`gatelab.data.Split.stacked_batches`)."""
    if start > 1:
        for r in runs:
            r.resume()
    model = stack_models([r.model for r in runs]).to(device)
    pruning.mask_gradients(model, [r.mask for r in runs])
    lrs = [float(r.cfg.optimizer.lr) for r in runs]
    per_net = len(set(lrs)) > 1  # a row's SGD step sizes: plain SGD at step 1 on gradients scaled by each net's lr
    params = regimes.trainable_parameters(model)
    opt = make_optimizer(OmegaConf.merge(cfg.optimizer, {"lr": 1.0}) if per_net else cfg.optimizer, params)
    if per_net:
        scale = torch.tensor(lrs, device=device)
        for p in params:
            p.register_hook(lambda g, s=scale.view(-1, *[1] * (p.dim() - 1)): g * s)
    gens = [torch.Generator().manual_seed(r.seed * 1000 + SHUFFLE_STREAM) for r in runs]
    if start > 1:
        opt.load_state_dict(stack_optimizer_state([r.last["optimizer"] for r in runs]))
        for g in opt.param_groups if per_net else []:
            g["lr"] = 1.0
        for r, g in zip(runs, gens):
            g.set_state(r.last["shuffle_rng"])
    return model, opt, gens


def _train_epoch(cfg, forward, opt, data, gens: list, autocast, epoch: int,
                 after_step=None) -> tuple[torch.Tensor, torch.Tensor]:
    """One epoch of mini-batch steps for the stacked seeds: per seed, the sum of the batch losses
    (weighted by batch size) and the number correct, on the device (no host sync inside the epoch);
    their means are the running means Keras reports in the paper's code. ``after_step(i)`` is
    called after the epoch's i-th step (1-based), if given."""
    S, n_train, bs = len(gens), len(data.train), cfg.optimizer.batch_size
    device = data.train.x.device
    loss_sum = torch.zeros(S, device=device)
    correct = torch.zeros(S, device=device)
    bar = tqdm(data.train.stacked_batches(bs, gens), total=math.ceil(n_train / bs),
               desc=f"epoch {epoch}/{cfg.epochs}", leave=False, disable=not cfg.progress, mininterval=1.0)
    for i, (xb, yb) in enumerate(bar, 1):
        with autocast:
            loss, c = objective(forward(xb).float(), yb, data.task)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()  # seed s's parameters get exactly the gradient of seed s's loss
        opt.step()
        loss_sum += loss.detach() * yb.shape[1]
        correct += c
        if after_step is not None:
            after_step(i)
    return loss_sum, correct


def stack_optimizer_state(states: list[dict]) -> dict:
    """One optimiser state dict for stacked parameters from the seeds' own (per-parameter tensors
    stacked; scalars such as Adam's step count, equal across seeds, taken from the first)."""
    stacked = {"param_groups": states[0]["param_groups"], "state": {}}
    for idx, first in states[0]["state"].items():
        stacked["state"][idx] = {k: torch.stack([st["state"][idx][k] for st in states])
                                 if torch.is_tensor(v) and v.dim() > 0 else v for k, v in first.items()}
    return stacked


def unstack_optimizer_state(state: dict, s: int, lr: Optional[float] = None) -> dict:
    """Seed ``s``'s optimiser state dict (as if it had been trained alone), a copy: every tensor is
    cloned, the step counts too (``opt.state_dict()`` hands out the live tensors, which the next step
    changes while a checkpoint of this state may still be waiting to be written). ``lr``: the net's
    own step size (a row's nets train at step 1 on scaled gradients)."""
    def own(v):
        if not torch.is_tensor(v):
            return v
        return v[s].clone() if v.dim() > 0 else v.clone()
    groups = state["param_groups"] if lr is None else [dict(g, lr=float(lr)) for g in state["param_groups"]]
    return {"param_groups": groups,
            "state": {idx: {k: own(v) for k, v in st.items()} for idx, st in state["state"].items()}}
