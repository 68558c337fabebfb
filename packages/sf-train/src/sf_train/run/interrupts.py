"""Ctrl-C and SIGTERM end a training run the way its frame budget does.

A run killed mid-step writes no final checkpoint and prints no final line, so the last thing a
user sees is a training window that no evaluation stands behind, from a policy that was never
saved. Instead, the first SIGINT or SIGTERM asks the trainer to stop after its current batch:
it then writes and evaluates its final checkpoint and reports as at the end of its frames, and
episodes still running are never counted (only episodes that ended are). A batch job's
scheduler sends SIGTERM before it kills, so this also saves a preempted run. A second signal
acts as it did before the run started: Ctrl-C aborts at once, SIGTERM terminates.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["STOP_SIGNALS", "stop_on_signals"]

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that end a run gracefully."""


@contextlib.contextmanager
def stop_on_signals(request_stop: Callable[[], None]) -> Iterator[None]:
    """While the block runs, the first of :data:`STOP_SIGNALS` calls ``request_stop`` and puts
    back every handler that was there before, so that a second one acts as usual. Outside the
    main thread (where Python cannot take signals) the block runs with the handlers untouched.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}

    def restore() -> None:
        for s, handler in previous.items():
            signal.signal(s, handler)

    def first(signum: int, frame: FrameType | None) -> None:
        restore()
        log.warning(
            "%s: ending after this batch with a final checkpoint and its evaluation "
            "(again to abort at once)",
            signal.Signals(signum).name,
        )
        request_stop()

    for s in STOP_SIGNALS:
        signal.signal(s, first)
    try:
        yield
    finally:
        restore()
