"""Game processes that play one game each at a time, each death charged to its own game.

Why not :class:`concurrent.futures.ProcessPoolExecutor`: when one of its processes dies (a
ViZDoom ``init()`` failure segfaults Python; a game process is SIGKILLed), the executor fails every
game not yet finished with ``BrokenProcessPool`` and terminates the other processes, so the
tournament cannot tell which game broke it and replays games that were fine; and leaving its
``with`` block waits for every other game before an error surfaces. Here the tournament hands
each game process one game over the game process's own pipe, so a death is charged to the game that game process
was playing, only that game process is replaced, and the others play on. Each game process leads its own
process group (its ViZDoom engines with it) and works in its own scratch folder; the pool
kills the group and removes the folder whenever a game process ends, on every path.
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

from sf_envs.lifecycle import kill_group
from sf_league.store import GameRecord
from sf_league.tournament.game import GameJob, game_process_main, remove_folder

__all__ = ["GameOutcome", "GamePool", "GameProcessPool"]

logger = logging.getLogger(__name__)

_STOP_TIMEOUT_S = 10.0  # an idle game process closes its matches and exits well within this


@dataclass(frozen=True)
class GameOutcome:
    """What became of one attempt at a game: its record, or why it failed (an engine error,
    the traceback of an exception, or how the game process died)."""

    job: GameJob
    record: GameRecord | None
    error: str | None


class GamePool(Protocol):
    """Where a tournament's games are played: game processes here (:class:`GameProcessPool`) or
    Ray actors over a cluster (:class:`sf_league.tournament.ray_games.RayGamePool`)."""

    def submit(self, job: GameJob) -> None: ...

    @property
    def unfinished(self) -> int: ...

    def next_outcome(self) -> GameOutcome: ...

    def close(self) -> None: ...

    def __enter__(self) -> GamePool: ...

    def __exit__(self, *exc: object) -> None: ...


class _GameProcess:
    """One game process, its pipe, its scratch folder and the game it is playing."""

    def __init__(self, context: Any, play: Callable[[GameJob], GameRecord]) -> None:
        self.scratch = tempfile.mkdtemp(prefix="sf_league_game_")
        self.conn, child_conn = context.Pipe()
        self.process = context.Process(
            target=game_process_main, args=(child_conn, self.scratch, play), name="sf-league-game"
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
        """Ends the game process (asked politely when idle, killed when playing or stuck), then its
        engines and its scratch folder."""
        if self.job is None and self.process.is_alive():
            with contextlib.suppress(OSError):  # it died meanwhile
                self.conn.send(None)
            self.process.join(_STOP_TIMEOUT_S)
        # The whole group at once, game process included: only a live game process's memory maps name the
        # shared memory of an engine it was starting, and the group outlives its leader
        # (engines orphaned by a game process that died are still in it).
        kill_group(self.process.pid)
        self.process.join(_STOP_TIMEOUT_S)
        self.conn.close()
        remove_folder(self.scratch)


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (a fatal ViZDoom engine error?)" if name == "SIGSEGV" else ""
        return f"the game process was killed by {name}{hint}"
    return f"the game process exited with status {exitcode}"


class GameProcessPool:
    """``workers`` game processes (spawned: no forked torch or engine state) playing the
    submitted games; use as a context manager, which stops every game process on the way out.

    Args:
        workers: Game processes.
        play: What a game process calls per game; a module-level function (it is pickled by name).
    """

    def __init__(self, workers: int, play: Callable[[GameJob], GameRecord]) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._play = play
        self._waiting: collections.deque[GameJob] = collections.deque()
        self._processes: list[_GameProcess] = []
        try:
            for _ in range(workers):
                self._processes.append(_GameProcess(self._context, play))
        except BaseException:
            self.close()
            raise

    def submit(self, job: GameJob) -> None:
        """Queues ``job``; games start in the order submitted."""
        self._waiting.append(job)

    @property
    def unfinished(self) -> int:
        """Games submitted whose outcome has not been returned yet."""
        return len(self._waiting) + sum(r.job is not None for r in self._processes)

    def next_outcome(self) -> GameOutcome:
        """Starts waiting games on idle game processes and returns the next finished attempt.

        A game process that died is replaced at once; if it was playing, its game's outcome is the
        death. Waits as long as games run (a hung engine is the match's to time out).

        Raises:
            RuntimeError: If no game is waiting or playing.
        """
        if not self.unfinished:
            raise RuntimeError("next_outcome() with no game submitted: submit() one first")
        job: GameJob | None
        while True:
            for handle in self._processes:
                if handle.job is None and self._waiting and handle.process.is_alive():
                    handle.job = self._waiting.popleft()
                    with contextlib.suppress(OSError):  # died while idle: seen below
                        handle.conn.send(handle.job)
            ready = wait(
                [r.conn for r in self._processes if r.job is not None]
                + [r.process.sentinel for r in self._processes],
                timeout=0.5,
            )
            for k, handle in enumerate(self._processes):
                # Liveness is asked, not only waited on: an engine that inherited a pipe would
                # keep a dead game process's end of it open.
                alive = handle.process.is_alive()
                if handle.job is not None and (handle.conn in ready or not alive):
                    try:
                        if handle.conn.poll():  # a result sent just before dying still counts
                            record, error = handle.conn.recv()
                            job, handle.job = handle.job, None
                            return GameOutcome(job, record, error)
                    except (EOFError, OSError):  # died mid-game: reported below
                        pass
                if not alive:
                    job, handle.job = handle.job, None
                    why = _death(handle.process.exitcode)
                    handle.stop()
                    self._processes[k] = _GameProcess(self._context, self._play)
                    if job is not None:
                        return GameOutcome(job, None, why)
                    logger.warning("an idle game process died (%s); started a new one", why)

    def close(self) -> None:
        """Stops every game process (games still playing are abandoned); idempotent."""
        self._waiting.clear()
        while self._processes:
            self._processes.pop().stop()

    def __enter__(self) -> GameProcessPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
