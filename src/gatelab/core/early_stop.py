"""Ctrl-C while an entry point is still importing torch and Hydra: one line and exit 130, not an
import traceback. Imports nothing heavy; :func:`install` first thing, :func:`release` before work."""
import signal
import sys


def _stopped_early(signum, frame):
    print("gatelab: stopped by Ctrl-C before anything ran", file=sys.stderr)
    sys.exit(130)


def install() -> bool:
    """Catch Ctrl-C during the imports; not where SIGINT is ignored (nohup, a background job), which
    stays ignored. Returns whether it was installed."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _stopped_early)
    return True


def release(installed: bool) -> None:
    """From here on Ctrl-C is Python's KeyboardInterrupt, which the training loop turns into a saved stop."""
    if installed:
        signal.signal(signal.SIGINT, signal.default_int_handler)
