"""One thread per player and a per-tic barrier: the lock step that holds in ViZDoom multiplayer.

Measured here, ViZDoom's network games stay in step only when every player advances one tic and
then waits for the others: ``make_action(a, 4)`` per step with a barrier deadlocks, and free
threads drift and hang. :class:`LockStep` owns the threads: each one runs the calls for its
player (a DoomGame is only ever touched by its own thread) and every wait has a timeout, so a hung
engine becomes a :class:`MatchHungError` in the caller instead of a frozen process.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["LockStep", "MatchError", "MatchHungError"]


class MatchError(RuntimeError):
    """The match cannot continue (an engine crashed or hung); make a new one.

    A match used after ``close()`` raises :class:`~sf_envs.errors.ClosedEnvError` instead.
    """


class MatchHungError(MatchError):
    """A player did not finish its work within the timeout: an engine is hung."""


_STOP = object()
# How long the other players may take to report once one has failed: a player whose peer's
# engine died blocks inside its own engine until the match is closed (its engines killed), so
# waiting longer only delays the error.
_GRACE_S = 1.0


class LockStep:
    """``n`` player threads that run one call each per :meth:`run` and meet at :meth:`sync`.

    Args:
        n: Number of players (threads).
        timeout: Seconds any single wait may take: a tic barrier, or a whole :meth:`run` call
            (``run`` takes its own timeout for slow calls such as ``init``).
        name: Thread name prefix, for debugging.

    Once a wait times out or a call fails, the barrier is aborted so the other threads stop too,
    and the group is broken: every later :meth:`run` raises :class:`MatchError`.
    """

    def __init__(self, n: int, timeout: float, name: str = "sf-match") -> None:
        self.n = n
        self.timeout = timeout
        self._barrier = threading.Barrier(n, timeout=timeout)
        self._inboxes: list[queue.Queue[Any]] = [queue.Queue() for _ in range(n)]
        self._outbox: queue.Queue[tuple[int, BaseException | None, Any]] = queue.Queue()
        self._broken: str | None = None
        self._threads = [
            threading.Thread(target=self._loop, args=(i,), name=f"{name}-{i}", daemon=True)
            for i in range(n)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def broken(self) -> bool:
        """True once a call failed or hung: player threads may be blocked inside an engine."""
        return self._broken is not None

    def sync(self) -> None:
        """Waits until every player reached this point (called from player threads)."""
        self._barrier.wait()

    def run(self, fn: Callable[[int], Any], timeout: float | None = None) -> list[Any]:
        """Runs ``fn(i)`` in thread ``i`` for every player and returns the results in order.

        Raises:
            MatchHungError: when not every player finished within ``timeout`` seconds.
            MatchError: when a player's call raised (chained), or the group is already broken.
        """
        if self._broken is not None:
            raise MatchError(f"the match is unusable since {self._broken}; create a new match")
        for inbox in self._inboxes:
            inbox.put(fn)
        results: list[Any] = [None] * self.n
        failures: list[tuple[int, BaseException]] = []
        limit = self.timeout if timeout is None else timeout
        for _ in range(self.n):
            # Once a player failed, the others get a short grace: a player whose peer's engine
            # died can block inside the engine, and the failure is already known.
            wait = min(limit, _GRACE_S) if failures else limit
            try:
                i, error, value = self._outbox.get(timeout=wait)
            except queue.Empty:
                if failures:
                    break
                self._break("a player hung")
                raise MatchHungError(
                    f"a player did not finish within {limit:.0f} s; the engine "
                    "is hung. Close this match and create a new one"
                ) from None
            if error is None:
                results[i] = value
            else:
                failures.append((i, error))
                self._barrier.abort()  # frees players waiting for the failed one
        if failures:
            i, error = min(failures, key=lambda f: isinstance(f[1], threading.BrokenBarrierError))
            self._break(f"player {i} failed: {error!r}")
            raise MatchError(f"player {i} failed: {error}") from error
        return results

    def _break(self, reason: str) -> None:
        self._broken = reason
        self._barrier.abort()

    def _loop(self, i: int) -> None:
        inbox = self._inboxes[i]
        while True:
            fn = inbox.get()  # idle threads wait for work or _STOP without a timeout
            if fn is _STOP:
                return
            try:
                self._outbox.put((i, None, fn(i)))
            except BaseException as exc:
                self._outbox.put((i, exc, None))

    def stop(self, timeout: float) -> bool:
        """Ends the threads once their current call returns; True when all have ended."""
        self._barrier.abort()
        for inbox in self._inboxes:
            inbox.put(_STOP)
        for thread in self._threads:
            thread.join(timeout)
        return not any(t.is_alive() for t in self._threads)
