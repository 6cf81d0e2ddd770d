"""One net's run inside a training job: its config, directory, single-net model and tracker, and
the only writer of its ``results.json`` and checkpoints (:mod:`gatelab.core.results`)."""
from __future__ import annotations

import logging
import math
import statistics
import time
import traceback
from pathlib import Path
from typing import Optional

import torch

from gatelab.analyses import pruning
from gatelab.core import checkpoints
from gatelab.core.results import RESULTS, RESULTS_VERSION, attempts, epoch_seconds, read_results
from gatelab.core.runs import plain
from gatelab.nets import regimes
from gatelab.training.tracking import NullTracker, make_tracker

log = logging.getLogger("gatelab")


def _finite_or_none(v: float) -> Optional[float]:
    return v if math.isfinite(v) else None


RESERVE = 4096  # bytes of trailing spaces in results.json: a full disk can still record the run's status
SLOW = 10.0  # an epoch this many times the median of those before it: shared cores or a pause, not the run


def slow_epoch(history: list, seconds: float) -> Optional[float]:
    """``seconds`` over the median epoch before it, where 3 or more epochs came before and it is :data:`SLOW`
    times or more; else None. Seen on a 2-core Zen 3: a 1.1 s epoch at 2 threads took 30-90 s while another
    process held one core (OpenMP's threads wait for the one descheduled); at 1 thread it took 1.6 s."""
    before = epoch_seconds(history)
    if len(before) < 3:
        return None
    median = statistics.median(before)
    return seconds / median if median > 0 and seconds >= SLOW * median else None


class RunState:
    """One seed's run (a net of the stack): its results as they grow, its best epoch, its resume point."""

    def __init__(self, seed: int, run_dir: Path, cfg, t_start: float):
        self.seed, self.run_dir, self.cfg, self.t_start = seed, run_dir, cfg, t_start
        self.results = {"version": RESULTS_VERSION, "status": "running", "seed": seed, "config": plain(cfg),
                        "history": []}
        self.prior = None if cfg.force else read_results(run_dir / RESULTS)  # kept if this attempt fails early
        self.model, self.tracker, self.last, self.source, self.mask = None, NullTracker(), None, None, None
        self.best_acc, self.best_epoch, self.active, self.started = -1.0, None, True, False
        self.warned_slow = False
        self.best_state, self.best_saved = None, True  # the best epoch's weights until best.pt is written
        self.ckpt_dir = run_dir / checkpoints.CKPT_DIR

    @property
    def history(self) -> list:
        return self.results["history"]

    def build(self, data, env: dict) -> None:
        """The model at initialisation (an FLNPF source is loaded and checked here) and the tracker."""
        self.model, info = regimes.build_model(self.cfg, data.in_shape, data.out_dim, self.source)
        if pruning.active(self.cfg):  # an IMP round: the initialisation with the pruned weights zeroed
            self.mask = pruning.make_mask(self.cfg)
            pruning.apply_(self.model, self.mask)
            checkpoints.save(self.run_dir / pruning.MASK_FILE, mask=self.mask, imp=plain(self.cfg.imp))
            info["pruned_fraction"] = 1 - sum(int(m.sum()) for m in self.mask.values()) / \
                sum(m.numel() for m in self.mask.values())
        self.results.update(env={**env, "data_files": data.files},  # every data file it read, with its sha256
                            model={**regimes.describe(self.model), **info},
                            attempts=attempts(self.prior, env))
        first = self.results["attempts"][0]
        self.tracker = make_tracker(self.cfg, self.run_dir, str(first.get("id") or first.get("at")))

    def start_position(self) -> tuple[int, int]:
        return checkpoints.position(self.last) if self.last else (0, 0)

    def resume(self) -> None:
        """Restore the model, history and best epoch of the resume point (the optimiser, the data-order
        RNG and a partial epoch's sums are restored by the caller, who holds them stacked). The point's
        best weights are on disk as best.pt (:func:`checkpoints.settle`)."""
        last = self.last
        self.model.load_state_dict(last["model"])
        self.history[:] = last["history"]
        best_epoch, best_acc = checkpoints.best_of(self.history)
        if best_epoch is not None:
            self.best_epoch, self.best_acc = best_epoch, best_acc
        self.results.update(resumed_from_epoch=last["epoch"], resumes=last.get("resumes", 0) + 1,
                            prior_wall_time_s=last.get("wall_time_s", 0.0))
        at = f"epoch {last['epoch']}" + (f", step {last['batch']} of the next" if last.get("batch") else "")
        log.info("seed %d: resumed from %s at %s", self.seed, self.ckpt_dir, at)

    def record(self, epoch: int, m: dict, seconds: float, model_state) -> None:
        """Record one epoch's metrics ``m`` (train/test loss/acc); stop as diverged on a non-finite
        training loss. ``model_state()`` gives this run's weights, kept (on the device) when best."""
        if not math.isfinite(m["train_loss"]):
            self.active = False
            self.results.update(status="diverged", diverged_epoch=epoch)
            self.history.append({"epoch": epoch, "train_loss": None, "train_acc": m["train_acc"],
                                 "test_loss": None, "test_acc": None, "seconds": seconds})
            log.warning("seed %d, epoch %d: training loss is not finite; run stopped as diverged", self.seed, epoch)
            self.finish()  # final now: the results.json written at this epoch's end is whole
            return
        slow = slow_epoch(self.history, seconds)
        if slow and not self.warned_slow:  # once a run: the log says why its wall time is not its speed
            self.warned_slow = True
            log.warning("seed %d, epoch %d took %.0f s, %.0fx its median epoch: the cores were shared or the process "
                        "paused (torch threads %d; beside another busy process, threads=1 runs at its own speed, and so do "
                        "2 threads under OMP_WAIT_POLICY=PASSIVE for nets of large matrices: docs/configs.md)",
                        self.seed, epoch, seconds, slow, torch.get_num_threads())
        base = ("train_loss", "train_acc", "test_loss", "test_acc")
        extra = {k: _finite_or_none(v) for k, v in m.items() if k not in base}
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

    def save_epoch(self, writer: checkpoints.Writer, meta: dict, model_state) -> None:
        """After a recorded epoch: ``epoch_<N>.pt`` if asked for."""
        h = self.history[-1]
        if h["epoch"] in self.cfg.checkpoint_epochs:
            writer.save(self.ckpt_dir / f"epoch_{h['epoch']}.pt", **meta, seed=self.seed, epoch=h["epoch"],
                        test_acc=h["test_acc"], model=model_state())

    def save_best(self, writer: checkpoints.Writer, meta: dict) -> None:
        """``best.pt`` (the one it replaces kept as ``best_prev.pt``) if the best epoch changed since it
        was last written: before every ``last.pt``, so a resume point's best weights are always on disk
        (at the cadence of last.pt, not every epoch: a conv net's file is large)."""
        if not self.best_saved:
            writer.save(self.ckpt_dir / checkpoints.BEST, rotate=True, **meta, seed=self.seed,
                        epoch=self.best_epoch, test_acc=self.best_acc, model=self.best_state)
            self.best_state, self.best_saved = None, True

    def save_last(self, writer: checkpoints.Writer, meta: dict, state: dict, t_fit: float) -> None:
        """``last.pt`` (the previous one kept as ``prev.pt``): ``state`` holds the position (epoch,
        batch), the group, the weights, the optimiser, the data-order RNG and a partial epoch's sums."""
        writer.save(self.ckpt_dir / checkpoints.LAST, rotate=True, **meta, seed=self.seed, **state,
                    history=list(self.history), resumes=self.results.get("resumes", 0),
                    wall_time_s=self.results.get("prior_wall_time_s", 0.0) + time.time() - t_fit)

    def finish(self) -> None:
        if self.active:
            self.results["status"] = "completed"
        self.results.update(best_test_acc=self.best_acc if self.best_epoch else None, best_epoch=self.best_epoch,
                            final_train_acc=self.history[-1]["train_acc"] if self.history else None)

    def fail(self, e: BaseException, interrupted: bool = False) -> None:
        """Record an exception (``failed``) or Ctrl-C / SIGTERM (``interrupted``: the rerun resumes;
        also what a stop signal caused, such as a closed pipe); a run that had not started training
        keeps the history its results.json held."""
        if interrupted or isinstance(e, KeyboardInterrupt):
            self.results.update(status="interrupted")
        else:
            self.results.update(status="failed", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
        if not self.started and self.prior and self.prior.get("history"):
            self.results["history"] = self.prior["history"]

    def write(self) -> None:
        """results.json as it stands (status ``running`` while training), written atomically."""
        res = self.results
        res["wall_time_s"] = round(res.get("prior_wall_time_s", 0.0) + time.time() - self.t_start, 3)
        res["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            checkpoints.atomic_write_json(self.run_dir / RESULTS, res, reserve=RESERVE)
        except checkpoints.DiskFull:  # the status still fits in the room the last write reserved
            checkpoints.rewrite_json_in_place(self.run_dir / RESULTS, {k: v for k, v in res.items() if k != "traceback"})
