"""Without progress bars (output to a file or a pipe, as under a scheduler), a line at most every :data:`TICK`
seconds while a job trains or evaluates, so that silence never looks like a hang (issue #57): the steps done, their
rate and the time left in the epoch; the test batches evaluated. One clock for both (:attr:`Ticker.last_line`):
evaluation's first line comes :data:`TICK` seconds after the epoch's last."""
from __future__ import annotations

import logging
import time

log = logging.getLogger("gatelab")
TICK = 30.0  # seconds between progress lines when the output is not a terminal


class Ticker:
    """Called after each step (or test batch) ``i`` of ``total``: logs a line when :data:`TICK` seconds passed since
    the last line any ticker logged (or since the epoch began)."""
    last_line = 0.0  # the last line of any ticker, or the start of the epoch

    def __init__(self, epoch: int, epochs: int, total: int, skip: int = 0, every: float = 0.0, what: str = "step"):
        self.epoch, self.epochs, self.total, self.skip, self.what = epoch, epochs, total, skip, what
        self.t0 = time.time()
        if what == "step":  # an epoch begins: its clock starts now
            Ticker.last_line = self.t0
        self.every = every or TICK

    def __call__(self, i: int, total: int = 0) -> None:
        now = time.time()
        self.total = total or self.total
        if now - Ticker.last_line < self.every:
            return
        Ticker.last_line = now
        rate = (i - 1 - self.skip) / max(now - self.t0, 1e-9) if self.what == "step" else i / max(now - self.t0, 1e-9)
        done = i - 1 if self.what == "step" else i
        left = (self.total - done) / rate if rate > 0 else float("nan")
        if self.what == "step":
            log.info("epoch %d/%d: step %d/%d, %.2f steps/s, about %.0f s left in the epoch", self.epoch, self.epochs,
                     done, self.total, rate, left)
        else:
            log.info("epoch %d/%d: %s, batch %d/%d, about %.0f s left", self.epoch, self.epochs, self.what, done,
                     self.total, left)
