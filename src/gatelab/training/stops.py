"""What stops training from outside, and what it saves: Ctrl-C (SIGINT) and SIGTERM while nets train
are taken at the next step boundary, after a group checkpoint of that point, and recorded
``interrupted`` (:func:`stop_signals`, used by :func:`gatelab.training.loop.train_entries`); a closed
pipe (``| tee`` ended by the same Ctrl-C) silences the progress bars instead of failing the runs
(:class:`Bars`). What survives which stop: docs/resume.md."""
from __future__ import annotations

import contextlib
import signal
import sys
import threading


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while runs train: recorded ``interrupted`` (the same command resumes them); ``saved``
    says where their progress was saved."""
    by, code = "Ctrl-C", 130

    def __init__(self, saved: str = ""):
        super().__init__(saved)
        self.saved = saved


class Terminated(Interrupted):
    """SIGTERM while runs train (``kill``, a scheduler's preemption or time limit): as Ctrl-C."""
    by, code = "SIGTERM", 143


class _Stop:
    """A stop signal (SIGINT, SIGTERM) while nets train. Inside the step loop it is taken at the next
    step boundary, after a group checkpoint of that point (:meth:`take`), so no work is lost; outside
    it, or at a second signal, it stops at once (what the last checkpoint holds survives)."""

    def __init__(self):
        self.signum, self.deferred = None, False

    def handle(self, signum, frame) -> None:
        first, self.signum = self.signum is None, signum
        if self.deferred and first:
            return
        raise self.exception("nothing more was saved since the last checkpoint")

    def exception(self, saved: str) -> Interrupted:
        return (Terminated if self.signum == signal.SIGTERM else Interrupted)(saved)

    @property
    def pending(self) -> bool:
        return self.signum is not None

    def take(self, saver, at: str) -> None:
        """Stop after the checkpoint ``saver`` just handed over has reached the disk."""
        saver.writer.wait()
        raise self.exception(f"progress saved at {at}")


STOP = _Stop()


@contextlib.contextmanager
def stop_signals():
    """Ctrl-C and SIGTERM while runs train stop them at the next step with their progress saved
    (:class:`_Stop`), recorded ``interrupted``. A handler set by someone else (submitit's SIGTERM
    handler on a cluster) is left alone. Only in the main thread (signals are delivered there)."""
    handlers = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mine = [s for s, default in handlers.items() if signal.getsignal(s) is default]
    STOP.__init__()
    for s in mine:
        signal.signal(s, STOP.handle)
    try:
        yield
        if STOP.pending:  # the signal came during the last epoch: the runs completed, then stop
            raise STOP.exception("the runs completed before the stop")
    finally:
        for s in mine:
            signal.signal(s, handlers[s])
        STOP.deferred = False


class Bars:
    """The stream of the progress bars: a closed pipe (``| tee`` ended by the same Ctrl-C) silences
    the bars instead of failing the runs."""

    def __init__(self):
        self.stream, self.broken = sys.stderr, False

    def write(self, text: str) -> None:
        if not self.broken:
            try:
                self.stream.write(text)
            except (OSError, ValueError):
                self.broken = True

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self.broken = True

    def __getattr__(self, name):
        return getattr(self.stream, name)


def bars_on(cfg) -> bool:
    """Progress bars only for a person at a terminal: ``progress=true`` and stderr a TTY. Redirected
    to a file or a pipe (a log, a batch job), the run prints its one line per epoch and no bars
    (tqdm's redraws would fill the log: 247 lines for 10 epochs)."""
    try:
        return bool(cfg.progress) and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False

