"""The training loop: one run = one (dataset, arch, regime, optimiser, seed) -> ``results.json``.

Per epoch: train loss/accuracy (running mean over the epoch's mini-batches, as Keras reports them
in the paper's code), test loss/accuracy; checkpoints ``ckpt/last.pt`` (every ``checkpoint_every``
epochs and every ``checkpoint_minutes`` inside an epoch, the one it replaces kept as ``prev.pt``),
``ckpt/best.pt`` (best test accuracy: the FLNPF source, as in the paper's code) and
``ckpt/epoch_<N>.pt`` for ``checkpoint_epochs`` (0: the initialisation). A non-finite loss stops
the run with status ``diverged``; an exception records ``failed``, Ctrl-C or SIGTERM ``interrupted``. Only
``completed`` runs are results.

The nets of one job (the seeds of a cell, a row's regime family) train stacked
(:mod:`gatelab.training.stacking`) and checkpoint as one group: a kill at any instant resumes all
of them from one common point, bit-identical on the CPU to an uninterrupted run. A single run is
the case S = 1. Prerequisite runs (an FLNPF source, an earlier IMP round) are the plan's jobs
(:mod:`gatelab.launch.plan`), never trained here.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from gatelab.analyses import pruning
from gatelab.core import checkpoints, machine
from gatelab.core.validation import validate
from gatelab.core.results import FINAL, LOSS_TRACE, environment, finished_results, locked, resolve_device
from gatelab.core.runs import plain, seed_configs
from gatelab.data import datasets as data_mod
from gatelab.nets import regimes
from gatelab.nets.dgn import unstack_state
from gatelab.training import stacking
from gatelab.training.heartbeat import Ticker
from gatelab.training.metrics import evaluate, extra_metrics, objective
from gatelab.training.run_state import RunState
from gatelab.training.speed import determinism, heap_reuse, precision
from gatelab.training.stops import STOP, Bars, bars_on, stop_signals

log = logging.getLogger("gatelab")


def train(cfg, run_dir: Path) -> dict:
    """Train one run (``cfg.seed``) into ``run_dir``; returns its results dict (see :func:`train_seeds`)."""
    return train_seeds(cfg, {int(cfg.seed): Path(run_dir)})[int(cfg.seed)]


def train_seeds(cfg, run_dirs: dict) -> dict:
    """Train the seeds ``run_dirs`` maps to run directories, together; write each ``results.json``."""
    seeds = list(run_dirs)
    entries = [(c, Path(run_dirs[seed])) for seed, c in zip(seeds, seed_configs(cfg, seeds))]
    return dict(zip(seeds, train_entries(entries)))


def train_entries(entries: list) -> list:
    """Train the runs ``entries`` [(config, run directory)] together (stacked); their results, in order.

    A run already completed or diverged in its directory is returned as it is (``skipped``); one
    stopped early resumes from its checkpoints. Raises (before any training) on a bad config, a
    missing dataset or an unusable FLNPF source; that and any later exception are recorded in every
    run's results.json before re-raising. A run directory is locked while it trains, so two
    processes never train the same run at once."""
    with locked([d for _, d in entries]), stop_signals():
        out, todo = [None] * len(entries), []
        for i, (c, run_dir) in enumerate(entries):
            done = finished_results(run_dir)
            if done is not None and not c.force:
                log.info("%s already %s (best test acc %s); skipped (force=true reruns it)", run_dir,
                         done["status"], done["best_test_acc"])
                out[i] = {**done, "skipped": True}
                checkpoints.drop_kept(run_dir / checkpoints.CKPT_DIR)  # left by a kill just after it finished
                _warn_untraced(c, done)
            else:
                todo.append(i)
        if todo:
            for i, res in zip(todo, _train_todo([entries[i] for i in todo])):
                out[i] = res
    return out


def _warn_untraced(cfg, done: dict) -> None:
    """``loss_trace`` is a measurement, not part of the run key: a finished run asked for another window
    is not trained again, so say that its trace is not the one asked for."""
    asked, has = list(cfg.get("loss_trace") or []), list(done["config"].get("loss_trace") or [])
    if asked != has:
        log.warning("loss_trace=%s not recorded: the run finished with loss_trace=%s (force=true retrains it "
                    "with the new window)", asked, has)


def _train_todo(entries: list) -> list:
    """Build, resume and train the runs ``entries``. Settings shared by the stack (data, epochs,
    batch size, device) come from the first config."""
    cfg = entries[0][0]
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    t_start = time.time()
    for c, _ in entries:  # precision=auto: what it resolves to here, as the run key has it
        if str(c.get("precision")) == "auto":
            c.precision = machine.precision_auto(c)
    runs = [RunState(int(c.seed), Path(run_dir), c, t_start) for c, run_dir in entries]
    try:
        for r in runs:  # bad input fails here, before the data is loaded
            validate(r.cfg)
            r.source = regimes.source_path(r.cfg)
            if pruning.active(r.cfg):
                pruning.parent_dir(r.cfg)
        steady = determinism(cfg)  # before the device starts: cuBLAS reads its workspace setting once
        device = resolve_device(cfg.device)
        here = machine.detect(device)
        lrs = len({float(r.cfg.optimizer.lr) for r in runs}) > 1  # a row's nets at their own step sizes
        env = {**environment(device), **precision(cfg, device), **steady, "heap_reuse": heap_reuse(cfg.heap_reuse),
               "channels_last": machine.channels_last(cfg, here),
               # the nets trained in one step with this one: a run key names the settings, not the bits (docs/resume.md)
               "stack": [f"{r.cfg.regime.name}/seed{r.seed}" + (f"/lr{float(r.cfg.optimizer.lr):g}" if lrs else "")
                         for r in runs]}
        torch.manual_seed(cfg.seed)
        data = data_mod.load(cfg.dataset, cfg.data, device)
        for r in runs:
            r.build(data, env)
        _resume_points(runs, cfg.force)
        for r in runs:
            r.started = True
        _fit(cfg, runs, data, device, lambda: [r.write() for r in runs])
    except BaseException as e:
        for r in runs:
            r.fail(e, interrupted=STOP.pending)
        if STOP.pending and not isinstance(e, KeyboardInterrupt):  # e.g. a closed pipe after Ctrl-C
            raise STOP.exception("nothing more was saved since the last checkpoint") from e
        raise
    finally:
        for r in runs:
            try:
                r.write()
            except checkpoints.DiskFull as full:  # not even results.json fits: the plan reads its checkpoints
                log.error("%s: its status could not be recorded (%s)", r.run_dir, full.strerror)
            r.tracker.finish(r.results)
    for r in runs:  # a finished run never resumes: the points kept for a resume are freed
        if r.results["status"] in FINAL:
            checkpoints.drop_kept(r.ckpt_dir)
    return [r.results for r in runs]


def _resume_points(runs: list, force: bool) -> None:
    """Each run's resume state, one common point for the whole stack (:func:`checkpoints.group_resume_point`),
    settled on disk before anything trains (:func:`checkpoints.settle`); what killed writers left is removed."""
    points = [None] * len(runs) if force else \
        checkpoints.group_resume_point([r.ckpt_dir for r in runs], checkpoints.group_of([r.run_dir for r in runs]))
    for r, p in zip(runs, points):
        checkpoints.clear_temporaries(r.run_dir)
        checkpoints.settle(r.ckpt_dir, p)
        r.last = None if p is None else p.state


def _fit(cfg, runs: list, data, device, save_progress) -> None:
    """Train the stack from its resume point. Runs at different points (checkpoints of an older or
    another grouping) train in turn, one stack per point: exact per net, not bit-identical to an
    unsplit stack."""
    points = sorted({r.start_position() for r in runs})
    if len(points) > 1:
        log.warning("the runs resume from different points %s (checkpoints of another grouping); they "
                    "train in turn, one stack per point", points)
    for point in points:
        _fit_stack(cfg, [r for r in runs if r.start_position() == point], data, device, save_progress)
    for r in runs:
        r.finish()


class _Saver:
    """The checkpoints of one stack: a group ``last.pt`` for every net at once (the nets' positions
    never differ), ``best.pt`` and ``epoch_<N>.pt``, ``step_<t>.pt``; written on a background thread."""

    def __init__(self, cfg, runs: list, model, opt, meta: dict):
        self.cfg, self.runs, self.model, self.opt, self.meta = cfg, runs, model, opt, meta
        self.writer, self.t_fit, self.t_last = checkpoints.Writer(), time.time(), time.time()
        self.group, self.at = checkpoints.group_of([r.run_dir for r in runs]), None

    def due(self) -> bool:
        """Inside an epoch: ``checkpoint_minutes`` have passed since the last group checkpoint."""
        minutes = self.cfg.get("checkpoint_minutes")
        return bool(minutes) and time.time() - self.t_last >= 60 * minutes

    def last(self, epoch: int, batch: int, shuffle: list, partial=None) -> None:
        """Every active net's best.pt (if it changed), then its last.pt at (``epoch`` done, ``batch``
        steps of the next); ``shuffle``: the data-order RNG states to resume from; ``partial``: per
        net, the sums of a partial epoch."""
        state, opt_state = self.model.state_dict(), self.opt.state_dict()
        for s, r in enumerate(self.runs):
            if r.active:
                r.save_best(self.writer, self.meta)
                r.save_last(self.writer, self.meta, dict(
                    epoch=epoch, batch=batch, group=self.group, model=unstack_state(state, s),
                    optimizer=stacking.unstack_optimizer_state(opt_state, s, r.cfg.optimizer.lr),
                    shuffle_rng=shuffle[s], partial=None if partial is None else partial[s]), self.t_fit)
        self.t_last, self.at = time.time(), (epoch, batch)

    def epoch(self, epoch: int, gens: list, stopping: bool = False) -> None:
        """After a recorded epoch: epoch_<N>.pt; at the cadence of ``checkpoint_every`` (and at the
        end, or when the job stops here) the group checkpoint."""
        state = self.model.state_dict()
        for s, r in enumerate(self.runs):
            if r.active:
                r.save_epoch(self.writer, self.meta, lambda: unstack_state(state, s))
        if epoch % self.cfg.checkpoint_every == 0 or epoch == self.cfg.epochs or stopping:
            self.last(epoch, 0, [g.get_state() for g in gens])

    def snapshot(self, step: int, epoch: int) -> None:
        """ckpt/step_<t>.pt: the weights after t optimiser steps."""
        state = self.model.state_dict()
        for s, r in enumerate(self.runs):
            if r.active:
                self.writer.save(r.ckpt_dir / f"step_{step}.pt", **self.meta, seed=r.seed, step=step, epoch=epoch,
                                 model=unstack_state(state, s))


class _Trace:
    """``loss_trace=[lo, hi]``: each net's full training-set loss after every step t in [lo, hi],
    appended to ``<run>/loss_trace.csv`` at the end of each epoch and with each mid-epoch checkpoint,
    so a resumed run loses none (it may repeat a step: the reader keeps its last line). Each traced
    step costs one evaluation of the training set and one host sync."""
    FILE = LOSS_TRACE

    def __init__(self, cfg, runs: list, model, data):
        self.window = list(cfg.get("loss_trace") or [])
        self.cfg, self.runs, self.model, self.data, self.rows = cfg, runs, model, data, []

    def start(self) -> None:
        """A run trained from step 0 (a forced rerun included) starts its trace afresh, with the loss at t=0."""
        for r in self.runs:
            (r.run_dir / self.FILE).unlink(missing_ok=True)
        self.after(0)

    def after(self, step: int) -> None:
        if self.window and self.window[0] <= step <= self.window[1]:
            loss, _ = evaluate(self.model, self.data.train, self.cfg.eval_batch_size, self.data.task, len(self.runs))
            self.rows.append((step, loss))

    def flush(self) -> None:
        for s, r in enumerate(self.runs):
            if self.rows and r.active:
                path = r.run_dir / self.FILE
                new = not path.is_file()
                with open(path, "a") as f:
                    f.write("step,loss\n" if new else "")
                    f.writelines(f"{t},{loss[s]:.9g}\n" for t, loss in self.rows)
        self.rows = []


def _fit_stack(cfg, runs: list, data, device, save_progress) -> None:
    """The epoch loop of runs at one resume point, their networks stacked."""
    model, opt, gens = stacking.setup(cfg, runs, device)
    meta = {"arch": plain(cfg.arch), "regime": plain(cfg.regime), "dataset": cfg.dataset.name,
            "in_shape": list(data.in_shape), "out_dim": data.out_dim}
    done, skip = runs[0].start_position()
    saver, trace = _Saver(cfg, runs, model, opt, meta), _Trace(cfg, runs, model, data)
    if (done, skip) == (0, 0) and 0 in cfg.checkpoint_epochs:  # the initialisation (Figure 3's kernels)
        for r in runs:
            checkpoints.save(r.ckpt_dir / "epoch_0.pt", **meta, seed=r.seed, epoch=0, test_acc=None,
                             model=r.model.state_dict())
    # Speed options (off by default): bf16 autocast; torch.compile of the forward pass.
    forward = torch.compile(model, mode=cfg.compile) if cfg.compile else model
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=machine.precision_of(cfg) == "bf16")
    per_epoch = math.ceil(len(data.train) / cfg.optimizer.batch_size)
    job_bar = tqdm(total=(cfg.epochs - done) * per_epoch - skip, desc=f"{len(runs)} net(s), epochs {done + 1}-"
                   f"{cfg.epochs}", unit="step", disable=not bars_on(cfg), mininterval=1.0, position=0, file=Bars())
    try:
        STOP.deferred = True
        if (done, skip) == (0, 0):
            if 0 in (cfg.get("checkpoint_steps") or []):
                saver.snapshot(0, 0)
            trace.start()
        for epoch in range(done + 1, cfg.epochs + 1):
            partial = [r.last["partial"] for r in runs] if skip else None
            m, seconds = _epoch(_Stack(cfg, forward, model, opt, data, gens, autocast, saver, job_bar, trace),
                                epoch, skip, partial)
            skip = 0
            trace.flush()
            for s, r in enumerate(runs):  # each run records its epoch; checkpoints on the writer's thread
                if r.active:
                    r.record(epoch, m[s], seconds, lambda: unstack_state(model.state_dict(), s))
            stopping = STOP.pending  # read once: a signal after this is taken at the next step
            saver.epoch(epoch, gens, stopping)
            save_progress()  # results.json of every run, once per epoch
            if not any(r.active for r in runs):
                break
            if stopping and epoch < cfg.epochs:
                STOP.take(saver, f"the end of epoch {epoch}")
    finally:
        STOP.deferred = False
        job_bar.close()
        saver.writer.close()


@dataclass
class _Stack:
    """What an epoch of stacked nets works with: the config, the forward pass (compiled or not), the
    stacked model and its optimiser, the data, the nets' data-order generators, the autocast context,
    the checkpoint saver, the job's progress bar and the loss trace."""
    cfg: object
    forward: object
    model: torch.nn.Module
    opt: torch.optim.Optimizer
    data: object
    gens: list
    autocast: object
    saver: _Saver
    bar: object
    trace: _Trace


def _epoch(st: _Stack, epoch: int, skip: int, partial):
    """One epoch (from step ``skip + 1`` with the sums of ``partial`` when resumed inside it), then the
    evaluation; the epoch's one host sync brings the metrics back. Returns (per-net metrics, seconds)."""
    cfg, model, data, gens, saver, trace = st.cfg, st.model, st.data, st.gens, st.saver, st.trace
    t0, S, device = time.time(), len(gens), data.train.x.device
    if partial:
        loss_sum = torch.stack([p["loss_sum"] for p in partial]).to(device)
        correct = torch.stack([p["correct"] for p in partial]).to(device)
        t0 -= partial[0]["seconds"]
    else:
        loss_sum, correct = torch.zeros(S, device=device), torch.zeros(S, device=device)
    shuffle = [g.get_state() for g in gens]  # the epoch's data order, to resume inside it
    per_epoch = math.ceil(len(data.train) / cfg.optimizer.batch_size)
    base, steps = (epoch - 1) * per_epoch, set(cfg.get("checkpoint_steps") or [])

    def after_step(i: int) -> None:
        st.bar.update(1)  # the whole job's bar: its ETA covers every epoch left
        trace.after(base + i)
        if base + i in steps:
            saver.snapshot(base + i, epoch)
        stopping = STOP.pending  # read once: a signal between two reads would stop without saving
        if stopping or (i < per_epoch and saver.due()):
            trace.flush()
            saver.last(epoch - 1, i, shuffle, [{"loss_sum": loss_sum[s].clone(), "correct": correct[s].clone(),
                                                 "seconds": time.time() - t0} for s in range(S)])
        if stopping:
            STOP.take(saver, f"epoch {epoch - 1}, step {i} of the next")
    train_epoch(cfg, st.forward, st.opt, data, gens, st.autocast, epoch, (loss_sum, correct), skip, after_step)
    test_loss, test_acc = evaluate(model, data.test, cfg.eval_batch_size, data.task, S,
                                   bf16=str(cfg.get("eval_precision") or "fp32") == "bf16",
                                   tick=None if bars_on(cfg) else Ticker(epoch, int(cfg.epochs), 0, what="evaluating"))
    extra = extra_metrics(cfg, model, data, S)
    n = len(data.train)
    train_loss, train_acc = (loss_sum / n).tolist(), [c / n for c in correct.tolist()]
    metrics = [{"train_loss": train_loss[s], "train_acc": train_acc[s], "test_loss": test_loss[s],
                "test_acc": test_acc[s], **extra[s]} for s in range(S)]
    return metrics, round(time.time() - t0, 3)




def train_epoch(cfg, forward, opt, data, gens: list, autocast, epoch: int, sums=None, skip: int = 0,
                after_step=None) -> tuple[torch.Tensor, torch.Tensor]:
    """One epoch of mini-batch steps for the stacked nets, from step ``skip + 1``: per net, the sum
    of the batch losses (weighted by batch size) and the number correct, added to ``sums`` (zeros
    by default) on the device (no host sync inside the epoch); their means are the running means
    Keras reports in the paper's code. ``after_step(i)`` runs after the epoch's i-th step."""
    device = data.train.x.device
    loss_sum, correct = sums if sums is not None else (torch.zeros(len(gens), device=device),
                                                       torch.zeros(len(gens), device=device))
    bs = cfg.optimizer.batch_size
    total = math.ceil(len(data.train) / bs)
    bar = tqdm(data.train.stacked_batches(bs, gens, skip), total=total, initial=skip,
               desc=f"epoch {epoch}/{cfg.epochs}", leave=False, disable=not bars_on(cfg), mininterval=1.0,
               position=1, file=Bars())
    ticker = None if bars_on(cfg) else Ticker(epoch, int(cfg.epochs), total, skip)
    for i, (xb, yb) in enumerate(bar, skip + 1):
        if ticker is not None:
            ticker(i)
        with autocast:
            loss, c = objective(forward(xb).float(), yb, data.task)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()  # net s's parameters get exactly the gradient of net s's loss
        opt.step()
        loss_sum += loss.detach() * yb.shape[1]
        correct += c
        if after_step is not None:
            after_step(i)
    return loss_sum, correct
