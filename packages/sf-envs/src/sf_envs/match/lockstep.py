"""One thread per player and a per-tic barrier: the lock step that holds in ViZDoom multiplayer.

Measured here, ViZDoom's network games stay in step only when every player advances one tic and
then waits for the others: ``make_action(a, 4)`` per step with a barrier deadlocks, and free
threads drift and hang. :class:`LockStep` owns the threads: each one runs the calls for its
player (a DoomGame is only ever touched by its own thread) and every wait has a timeout, so a hung
engine becomes a :class:`MatchHungError` in the caller instead of a frozen process.

A duel meets at the barrier eight times per match step, so its hand-offs are built on bare locks
(``_thread``) rather than ``threading.Barrier`` and ``queue.Queue``, whose condition variables
allocate a lock per wait: that cost a duel about a tenth of its driving CPU.
"""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LockStep", "MatchError", "MatchHungError", "TicBarrier"]


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


def _closed_lock() -> _thread.LockType:
    lock = _thread.allocate_lock()
    lock.acquire()
    return lock


class TicBarrier:
    """A barrier for ``n`` threads: the last to arrive opens every waiter's own lock.

    Like :class:`threading.Barrier` (``wait`` raises :class:`threading.BrokenBarrierError` once
    broken, by :meth:`abort` or by a wait that timed out), with one preallocated lock per thread.
    """

    def __init__(self, n: int, timeout: float) -> None:
        self._n = n
        self._timeout = timeout
        self._mutex = _thread.allocate_lock()
        self._arrived = 0
        self._waiting: list[_thread.LockType] = []
        self._broken = False
        self._own = threading.local()

    def wait(self) -> None:
        gate = getattr(self._own, "gate", None)
        if gate is None:
            gate = self._own.gate = _closed_lock()
        with self._mutex:
            if self._broken:
                raise threading.BrokenBarrierError
            self._arrived += 1
            if self._arrived == self._n:
                self._open_all()
                return
            self._waiting.append(gate)
        if gate.acquire(True, self._timeout):
            if self._broken:
                raise threading.BrokenBarrierError
            return
        with self._mutex:
            if gate in self._waiting:  # timed out for real: nobody opened it
                self._waiting.remove(gate)
                self._broken = True
                self._open_all()
                raise threading.BrokenBarrierError
        gate.acquire()  # opened just after the timeout: take that opening, carry on
        if self._broken:
            raise threading.BrokenBarrierError

    def abort(self) -> None:
        """Breaks the barrier: every waiting and later :meth:`wait` raises."""
        with self._mutex:
            self._broken = True
            self._open_all()

    def _open_all(self) -> None:  # holding the mutex
        self._arrived = 0
        for gate in self._waiting:
            gate.release()
        self._waiting.clear()


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
        self._barrier = TicBarrier(n, timeout)
        self._starts = [_closed_lock() for _ in range(n)]
        self._mutex = _thread.allocate_lock()
        self._finished = _closed_lock()  # opened when all are done or one failed
        self._signalled = False
        self._work: Any = None
        self._pending = 0
        self._results: list[Any] = [None] * n
        self._errors: list[BaseException | None] = [None] * n
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
        # No reset of _errors: any failure breaks the group, so a run after one never starts.
        self._work = fn
        self._pending = self.n
        for start in self._starts:
            start.release()
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            woken = self._finished.acquire(True, max(deadline - time.monotonic(), 0.0))
            with self._mutex:
                self._signalled = False
                pending = self._pending
            if pending == 0:
                break
            failed = any(e is not None for e in self._errors)
            if not woken:
                if failed:
                    break
                self._break("a player hung")
                raise MatchHungError(
                    f"a player did not finish within {limit:.0f} s; the engine "
                    "is hung. Close this match and create a new one"
                )
            # Once a player failed, the others get a short grace: a player whose peer's
            # engine died can block inside the engine, and the failure is already known.
            deadline = min(deadline, time.monotonic() + _GRACE_S)
        failures = [(i, e) for i, e in enumerate(self._errors) if e is not None]
        if failures:
            i, error = min(failures, key=lambda f: isinstance(f[1], threading.BrokenBarrierError))
            self._break(f"player {i} failed: {error!r}")
            raise MatchError(f"player {i} failed: {error}") from error
        return list(self._results)

    def _break(self, reason: str) -> None:
        self._broken = reason
        self._barrier.abort()

    def _loop(self, i: int) -> None:
        start = self._starts[i]
        while True:
            start.acquire()  # idle threads wait for work or _STOP without a timeout
            fn = self._work
            if fn is _STOP:
                return
            failed = False
            try:
                self._results[i] = fn(i)
            except BaseException as exc:
                self._errors[i] = exc
                failed = True
                self._barrier.abort()  # frees players waiting for the failed one
            with self._mutex:
                self._pending -= 1
                if (failed or self._pending == 0) and not self._signalled:
                    self._signalled = True
                    self._finished.release()

    def stop(self, timeout: float) -> bool:
        """Ends the threads once their current call returns; True when all have ended."""
        self._barrier.abort()
        self._work = _STOP
        for start in self._starts:
            if start.locked():
                start.release()
        for thread in self._threads:
            thread.join(timeout)
        return not any(t.is_alive() for t in self._threads)
