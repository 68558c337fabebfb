"""Playing one tournament game, start to finish, inside a game process.

Why whole games in worker processes rather than the vector engine: a tournament's matches are
heterogeneous (each seat may be a different checkpoint, a baseline or nobody when bots fill
in), games are short, and only a result needs to come back. A worker that owns a whole game
loads its players' policies once, steps the PettingZoo match with no inter-process traffic per
step, and returns a :class:`~sf_league.store.GameRecord`; it keeps the match open for its next
game of the same setup (:class:`MatchCache`), since starting one can cost more than a short
game. A fatal engine error (ViZDoom
segfaults Python in some ``init()`` failures) kills only that game process; the tournament replaces
it and retries the game (:mod:`sf_league.tournament.game_pool`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

import numpy as np

from sf_envs.lifecycle import find_processes, instance_ids, kill_processes, remove_shared_memory
from sf_envs.match import MatchError
from sf_league.store import GameRecord, Seat

__all__ = [
    "AgentSeat",
    "GameJob",
    "MatchCache",
    "attempt",
    "game_process_main",
    "isolate",
    "leave",
    "play_game",
    "play_in_game_process",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AgentSeat:
    """Who plays an agent seat: a league player name and how it acts."""

    player: str
    kind: str  # "random", "noop" or "checkpoint"
    checkpoint: str | None = None
    run_dir: str | None = None


@dataclass(frozen=True)
class GameJob:
    """One scheduled game; picklable, sent to a game process.

    Attributes:
        key: The game's unique key in the league (a rerun skips stored keys).
        scenario: The sf-envs match scenario to create.
        match_kwargs: Keyword arguments of ``make_match`` (map, bots, time limit, options),
            or of ``play_bot_game`` (map, bot_levels, timelimit) for a bot-only game.
        agents: The agent seats, ``player_0`` first; none for a bot-only game.
        bots: League names of the bots, in the match's bot order.
        scripted: League names of the scripted players, in the match's order.
        seed: Seed of the match and of the players' action sampling.
        settings: What is stored with the game (JSON-ready).
    """

    key: str
    scenario: str
    match_kwargs: dict[str, Any]
    agents: tuple[AgentSeat, ...]
    bots: tuple[str, ...]
    seed: int
    settings: dict[str, Any]
    scripted: tuple[str, ...] = ()


# Held by whichever end of a game process cleans up on the way out (the main thread, or the watcher
# once the tournament is gone): the other end must not end the process halfway through.
_LEAVING = threading.Lock()


def _watch_parent(parent: int, scratch: str) -> None:
    """Ends this game process when the tournament process is gone (SIGKILLed, or SIGTERMed).

    Orphaned ViZDoom engines ignore SIGTERM and spin at 100% CPU, so the engines (this
    process's children) are SIGKILLed. Killing them can take this process down (a controller
    whose engine dies mid-call may segfault), so everything else goes first: the engines'
    shared memory (unlinked names; the mappings live on until the processes end) and the
    scratch folder (no engine writes there until it exits). The process ends while the
    watcher still holds :data:`_LEAVING`, so the main thread (whose game fails as its engines
    die) cannot exit first and cut the cleanup short.
    """
    while os.getppid() == parent:
        time.sleep(0.5)
    _LEAVING.acquire()
    remove_shared_memory(instance_ids(os.getpid()))
    remove_folder(scratch)
    _kill_engines()
    remove_folder(scratch)
    os._exit(1)


def _kill_engines() -> None:
    """SIGKILLs this process's children (its engines) and removes their shared memory."""
    while children := find_processes(parent=os.getpid()):
        kill_processes(children)


def remove_folder(path: str) -> None:
    """Removes ``path``, trying again while something still writes into it (an engine that is
    exiting writes its config file there)."""
    for _ in range(40):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return
        time.sleep(0.05)


def isolate(scratch: str) -> None:
    """Makes this process a quiet game process working in ``scratch``: ViZDoom writes
    ``_vizdoom/`` into the cwd, the engines it starts inherit none of its descriptors (they
    would hold the other ends of its pipes and sockets open after it died, hiding its death),
    its console goes to /dev/null (the engines print their network handshake, which would
    garble the caller's progress bar; errors travel as messages) and Ctrl-C is the caller's to
    handle."""
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if int(fd) > 2:
                os.set_inheritable(int(fd), False)
    os.chdir(scratch)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def attempt(
    play: Callable[[GameJob], GameRecord], job: GameJob
) -> tuple[GameRecord | None, str | None]:
    """``(record, None)`` when ``play(job)`` finished, ``(None, why)`` when it failed."""
    try:
        return play(job), None
    except MatchError as e:  # an engine crashed or hung: the message says which
        return None, f"MatchError: {e}"
    except Exception:  # anything else is a bug: its traceback is the report
        return None, traceback.format_exc().rstrip()


def leave(scratch: str) -> None:
    """Removes ``scratch``, closes this game process's open matches and kills its engines.

    The folder goes first: closing a match whose peers are gone can take this process down
    (a controller may segfault), and an unlinked folder cannot be refilled by the engines
    still running in it. It is removed again at the end for whatever was being written while
    it went.
    """
    with _LEAVING:
        remove_folder(scratch)
        try:
            _CACHE.close()
        finally:
            _kill_engines()
            remove_folder(scratch)


def game_process_main(
    conn: Connection, scratch: str, play: Callable[[GameJob], GameRecord]
) -> None:
    """The life of a game process: plays the games the tournament sends over ``conn``, one
    at a time, and sends back ``(record, None)`` or ``(None, why it failed)``; ``None`` (or
    the tournament's end of the pipe closing) ends it.

    The game process works isolated in ``scratch`` (:func:`isolate`), leads its own process group (its engines
    join it, so the tournament can kill them with it even after the game process died) and watches
    its parent.
    """
    os.setpgid(0, 0)
    isolate(scratch)
    threading.Thread(target=_watch_parent, args=(os.getppid(), scratch), daemon=True).start()
    try:
        while (job := conn.recv()) is not None:
            conn.send(attempt(play, job))
    except EOFError:  # the tournament closed its end
        pass
    finally:
        # Also here, not only in the pool or the watcher: with the tournament gone (its pipe
        # closed), this thread may reach the end first.
        leave(scratch)


_POLICIES: dict[str, Any] = {}  # checkpoint path -> network, loaded once per game process
_ONE_ENV = np.zeros(1, dtype=np.int64)  # a seat's policy acts for one env: id 0


class _Actor:
    """Picks the action of one agent seat from its observation."""

    def __init__(self, seat: AgentSeat, env: Any, agent: str, seed: int) -> None:
        self.kind = seat.kind
        space = env.action_space(agent)
        # Choices per head: one head for Discrete, several for MultiDiscrete; 0 is each no-op.
        self.nvec = np.atleast_1d(space.n if hasattr(space, "n") else space.nvec)
        self.shape = space.shape
        self.rng = np.random.default_rng(seed)
        if seat.kind == "checkpoint":
            import torch

            from sf_train.evaluation import load_policy
            from sf_train.sampling.acting import PolicyRunner

            if not _POLICIES:
                torch.set_num_threads(1)  # the game processes already fill the cores
            # A checkpoint seat names both.
            checkpoint, run_dir = cast(str, seat.checkpoint), cast(str, seat.run_dir)
            if checkpoint not in _POLICIES:
                _POLICIES[checkpoint] = load_policy(
                    run_dir,
                    env.observation_space(agent),
                    env.action_space(agent),
                    checkpoint,
                )[0]
            generator = torch.Generator().manual_seed(seed)
            self.policy = PolicyRunner(_POLICIES[checkpoint], 1, "cpu", generator)

    def act(self, obs: Any) -> int | np.ndarray:
        if self.kind == "noop":
            action = np.zeros(len(self.nvec), dtype=np.int64)
        elif self.kind == "random":
            action = self.rng.integers(self.nvec)
        else:
            from sf_train.sampling.acting import stack_obs

            action = np.asarray(self.policy.act(stack_obs([obs]), _ONE_ENV)[0])
        return int(action.reshape(-1)[0]) if self.shape == () else action.reshape(self.shape)


def _play_bot_game(job: GameJob) -> GameRecord:
    """A game of bots only; the engine's host spectates (no agent seat, no agent steps)."""
    from sf_envs.match import play_bot_game

    start = time.perf_counter()
    kw = job.match_kwargs
    result = play_bot_game(kw["map"], kw["bot_levels"], timelimit=kw["timelimit"], seed=job.seed)
    seats = tuple(
        Seat(name, float(result["frags"][bot["name"]]))
        for name, bot in zip(job.bots, result["bots"], strict=True)
    )
    return GameRecord(
        job.key, job.scenario, seats, job.settings, job.seed, 0, time.perf_counter() - start
    )


class MatchCache:
    """Open matches of one game process, kept between games of the same setup (reset, not restarted).

    Starting a match costs about 0.3 s (agent and bots) to over 1 s (two networked agents),
    often more than a short game itself; the games of a pairing share one setup, and the seats
    are only who acts, so a game process resets the match it already has. A match that raised is
    closed and forgotten; at most ``size`` matches stay open (each holds its engines).
    """

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._open: OrderedDict[str, Any] = OrderedDict()

    def get(self, job: GameJob, workdir: str | None) -> Any:
        key = json.dumps([job.scenario, job.match_kwargs], sort_keys=True)
        env = self._open.pop(key, None)
        if env is None:
            env = _open_match(job, workdir)
        self._open[key] = env
        while len(self._open) > self.size:
            self._open.popitem(last=False)[1].close()
        return env

    def discard(self, env: Any) -> None:
        """Closes ``env`` and forgets it (after it raised: its engines may be gone)."""
        for key, value in list(self._open.items()):
            if value is env:
                del self._open[key]
        try:
            env.close()
        except Exception:  # the caller is already handling the error that broke it
            logger.warning("closing a broken match failed", exc_info=True)

    def close(self) -> None:
        """Closes every open match; idempotent."""
        while self._open:
            self._open.popitem()[1].close()


def _open_match(job: GameJob, workdir: str | None) -> Any:
    """The match of ``job``: a PettingZoo match, or its core when no agent plays (scripted
    players and bots only: nobody acts from the caller)."""
    from sf_envs.match import MatchConfig, MatchCore, make_match

    if job.agents:
        return make_match(job.scenario, workdir=workdir, **job.match_kwargs)
    return MatchCore(MatchConfig.create(job.scenario, **job.match_kwargs), workdir)


def _play_agents(env: Any, job: GameJob) -> tuple[Any, dict[str, Any], int]:
    """Plays a match with agent seats; returns its core, its result and the agent steps."""
    obs, _ = env.reset(seed=job.seed)
    actors = {
        agent: _Actor(seat, env, agent, job.seed + k)
        for k, (agent, seat) in enumerate(zip(env.possible_agents, job.agents, strict=True))
    }
    steps = 0
    while True:
        actions = {agent: actors[agent].act(obs[agent]) for agent in env.agents}
        obs, _, _, truncated, infos = env.step(actions)
        steps += 1
        if all(truncated.values()):
            break
    return env.core, next(iter(infos.values()))["match"], steps


def _play_scripted(core: Any, job: GameJob) -> tuple[Any, dict[str, Any], int]:
    """Plays a match of scripted players (and bots) only; as :func:`_play_agents`."""
    screens = np.zeros((0, *core.config.options.obs_shape), dtype=np.uint8)
    no_actions = np.zeros(0, dtype=np.int64)
    core.reset(job.seed, screens, None)
    while not core.finished:
        core.step(no_actions, screens, None)
    return core, core.result(), 0


def play_game(
    job: GameJob, workdir: str | None = None, cache: MatchCache | None = None
) -> GameRecord:
    """Plays ``job`` to the time limit and returns its record.

    A job of bots only is a bot-only game (:func:`sf_envs.match.play_bot_game`), played in the
    current working directory.

    Args:
        job: The game.
        workdir: Where the match's engines write their files; None: the current directory.
        cache: Keep the match open in it for the next game of the same setup; None: a fresh
            match, closed at the end.

    Raises:
        sf_envs.match.MatchError: If an engine crashes or hangs (the caller may retry).
    """
    if not job.agents and not job.scripted:
        return _play_bot_game(job)
    start = time.perf_counter()
    env = _open_match(job, workdir) if cache is None else cache.get(job, workdir)
    try:
        core, result, steps = (_play_agents if job.agents else _play_scripted)(env, job)
        # The engines' players: the agents, then the scripted players.
        deaths = [core.agent_stats(i)["deaths"] for i in range(len(core.players))]
    except BaseException:
        if cache is not None:
            cache.discard(env)
        raise
    finally:
        if cache is None:
            env.close()
    frags = result["frags"]
    league_names = [seat.player for seat in job.agents] + list(job.scripted)
    seats = [
        Seat(name, float(frags[player]), float(died))
        for name, player, died in zip(league_names, core.player_names, deaths, strict=True)
    ]
    seats += [
        Seat(name, float(frags[bot.name]))
        for name, bot in zip(job.bots, core.config.bots, strict=True)
    ]
    duration = time.perf_counter() - start
    logger.debug("game %s: %s in %.1f s", job.key, seats, duration)
    return GameRecord(job.key, job.scenario, tuple(seats), job.settings, job.seed, steps, duration)


_CACHE = MatchCache()  # this game process's open matches


def play_in_game_process(job: GameJob) -> GameRecord:
    """:func:`play_game` in a game process, with engine folders under its private cwd and
    the match kept open for the game process's next game of the same setup."""
    return play_game(job, workdir=str(Path.cwd()), cache=_CACHE)
