"""Game-runner processes that play one game each at a time, each death charged to its own game.

Why not :class:`concurrent.futures.ProcessPoolExecutor`: when one of its processes dies (a
ViZDoom ``init()`` failure segfaults Python; a runner is SIGKILLed), the executor fails every
game not yet finished with ``BrokenProcessPool`` and terminates the other processes, so the
tournament cannot tell which game broke it and replays games that were fine; and leaving its
``with`` block waits for every other game before an error surfaces. Here the tournament hands
each runner one game over the runner's own pipe, so a death is charged to the game that runner
was playing, only that runner is replaced, and the others play on. Each runner leads its own
process group (its ViZDoom engines with it) and works in its own scratch folder; the pool
kills the group and removes the folder whenever a runner ends, on every path.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import multiprocessing
import shutil
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Protocol

from sf_envs.vector.procs import kill_group
from sf_league.runner import GameJob, remove_folder, runner_main
from sf_league.store import GameRecord

__all__ = ["GameOutcome", "GamePool", "RunnerPool"]

logger = logging.getLogger(__name__)

_STOP_TIMEOUT_S = 10.0  # an idle runner closes its matches and exits well within this


@dataclass(frozen=True)
class GameOutcome:
    """What became of one attempt at a game: its record, or why it failed (an engine error,
    the traceback of an exception, or how the runner process died)."""

    job: GameJob
    record: GameRecord | None
    error: str | None


class GamePool(Protocol):
    """Where a tournament's games are played: runner processes here (:class:`RunnerPool`) or
    Ray actors over a cluster (:class:`sf_league.ray_runners.RayRunnerPool`)."""

    def submit(self, job: GameJob) -> None: ...

    @property
    def unfinished(self) -> int: ...

    def next_outcome(self) -> GameOutcome: ...

    def close(self) -> None: ...

    def __enter__(self) -> GamePool: ...

    def __exit__(self, *exc: object) -> None: ...


class _Runner:
    """One runner process, its pipe, its scratch folder and the game it is playing."""

    def __init__(self, context: Any, play: Callable[[GameJob], GameRecord]) -> None:
        self.scratch = tempfile.mkdtemp(prefix="sf_league_runner_")
        self.conn, child_conn = context.Pipe()
        self.process = context.Process(
            target=runner_main, args=(child_conn, self.scratch, play), name="sf-league-runner"
        )
        try:
            self.process.start()
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise
        finally:
            child_conn.close()
        self.job: GameJob | None = None

    def stop(self) -> None:
        """Ends the runner (asked politely when idle, killed when playing or stuck), then its
        engines and its scratch folder."""
        if self.job is None and self.process.is_alive():
            with contextlib.suppress(OSError):  # it died meanwhile
                self.conn.send(None)
            self.process.join(_STOP_TIMEOUT_S)
        # The whole group at once, runner included: only a live runner's memory maps name the
        # shared memory of an engine it was starting, and the group outlives its leader
        # (engines orphaned by a runner that died are still in it).
        kill_group(self.process.pid)
        self.process.join(_STOP_TIMEOUT_S)
        self.conn.close()
        remove_folder(self.scratch)


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (a fatal ViZDoom engine error?)" if name == "SIGSEGV" else ""
        return f"the runner process was killed by {name}{hint}"
    return f"the runner process exited with status {exitcode}"


class RunnerPool:
    """``workers`` runner processes (spawned: no forked torch or engine state) playing the
    submitted games; use as a context manager, which stops every runner on the way out.

    Args:
        workers: Runner processes.
        play: What a runner calls per game; a module-level function (it is pickled by name).
    """

    def __init__(self, workers: int, play: Callable[[GameJob], GameRecord]) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._play = play
        self._waiting: collections.deque[GameJob] = collections.deque()
        self._runners: list[_Runner] = []
        try:
            for _ in range(workers):
                self._runners.append(_Runner(self._context, play))
        except BaseException:
            self.close()
            raise

    def submit(self, job: GameJob) -> None:
        """Queues ``job``; games start in the order submitted."""
        self._waiting.append(job)

    @property
    def unfinished(self) -> int:
        """Games submitted whose outcome has not been returned yet."""
        return len(self._waiting) + sum(r.job is not None for r in self._runners)

    def next_outcome(self) -> GameOutcome:
        """Starts waiting games on idle runners and returns the next finished attempt.

        A runner that died is replaced at once; if it was playing, its game's outcome is the
        death. Waits as long as games run (a hung engine is the match's to time out).

        Raises:
            RuntimeError: If no game is waiting or playing.
        """
        if not self.unfinished:
            raise RuntimeError("next_outcome() with no game submitted: submit() one first")
        while True:
            for runner in self._runners:
                if runner.job is None and self._waiting and runner.process.is_alive():
                    runner.job = self._waiting.popleft()
                    with contextlib.suppress(OSError):  # died while idle: seen below
                        runner.conn.send(runner.job)
            ready = wait(
                [r.conn for r in self._runners if r.job is not None]
                + [r.process.sentinel for r in self._runners],
                timeout=0.5,
            )
            for k, runner in enumerate(self._runners):
                # Liveness is asked, not only waited on: an engine that inherited a pipe would
                # keep a dead runner's end of it open.
                alive = runner.process.is_alive()
                if runner.job is not None and (runner.conn in ready or not alive):
                    try:
                        if runner.conn.poll():  # a result sent just before dying still counts
                            record, error = runner.conn.recv()
                            job, runner.job = runner.job, None
                            return GameOutcome(job, record, error)
                    except (EOFError, OSError):  # died mid-game: reported below
                        pass
                if not alive:
                    job, runner.job = runner.job, None
                    why = _death(runner.process.exitcode)
                    runner.stop()
                    self._runners[k] = _Runner(self._context, self._play)
                    if job is not None:
                        return GameOutcome(job, None, why)
                    logger.warning("an idle game runner died (%s); started a new one", why)

    def close(self) -> None:
        """Stops every runner (games still playing are abandoned); idempotent."""
        self._waiting.clear()
        while self._runners:
            self._runners.pop().stop()

    def __enter__(self) -> RunnerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
