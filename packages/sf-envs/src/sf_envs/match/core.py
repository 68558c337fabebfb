"""A multiplayer Doom match stepped in exact lock step, observations written into caller buffers.

:class:`MatchCore` is what the PettingZoo env and the vector engine's workers share: the caller
owns per-agent output buffers (rows of shared memory for workers), and one step advances every
player by ``frame_skip`` tics, one tic at a time with a barrier between tics. It owns everything
the engines need and cleans all of it up in :meth:`close`: the threads, the leased host port, the
per-player working folders, and the engine processes themselves (killed by PID when they do not
exit, since orphaned engines spin at 100% CPU).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
from typing import Any, cast

import numpy as np
import vizdoom
from gymnasium import spaces

from sf_envs.errors import ClosedEnvError
from sf_envs.lifecycle import watchdog
from sf_envs.lifecycle.procs import command_line_option, console_to, find_processes, log_tail
from sf_envs.match.bots import write_bots_file
from sf_envs.match.hunt import Hunter
from sf_envs.match.lockstep import LockStep, MatchError
from sf_envs.match.navigation import nav_grid
from sf_envs.match.player import MEASUREMENTS, MatchPlayer, ScriptedMatchPlayer, game_args
from sf_envs.match.ports import PortLease, lease_port
from sf_envs.match.probe import mark_proven, probe_start, proven
from sf_envs.match.scenarios import MatchConfig
from sf_envs.match.scripted import ScriptedBrain, scripted_ladder
from sf_envs.match.spin import engine_path

__all__ = ["MatchCore"]

logger = logging.getLogger(__name__)

_STAT_NAMES = ("frags", "deaths", "hits", "damage_dealt", "damage_taken")
_SETTLE_TICS = 2  # bots added at the start can telefrag; baselines are taken after this
_START_ATTEMPTS = 3  # networked starts tried, each on a fresh port, before giving up
# How long a guarded host waits for its joiners: running out segfaults the caller, so a slow,
# overloaded machine gets time, whatever short timeout the caller chose to detect hangs.
_GUARDED_CONNECT_TIMEOUT_S = 60.0
# How long player i+1's start waits for player i's engine process to exist, and how often it looks.
_LAUNCH_TIMEOUT_S = 30.0
_LAUNCH_POLL_S = 0.002
#: With ``console_log``: the engines' console, in the match's folder.
ENGINE_LOG = "engine.log"


def _engine_pids(ini_paths: list[str]) -> list[int]:
    """PIDs of this process's engine children started with one of ``ini_paths`` as config."""
    return [
        pid
        for pid in find_processes(parent=os.getpid())
        if command_line_option(pid, "-config") in ini_paths
    ]


def _kill_engines(ini_paths: list[str]) -> None:
    # Only engines still running with our config paths: a bare PID could have been reused.
    for pid in _engine_pids(ini_paths):
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _release(ini_paths: list[str], workdir: str) -> None:
    """What must go even if the match is never closed (at garbage collection or exit): the
    engines, which would otherwise outlive this process, and the match's folder."""
    _kill_engines(ini_paths)
    shutil.rmtree(workdir, ignore_errors=True)
    watchdog.release(workdir)


class MatchCore:
    """One match of ``config.num_agents`` learning agents (plus scripted players and bots), in
    lock step.

    Args:
        config: A validated :class:`~sf_envs.match.scenarios.MatchConfig`.
        workdir: Parent folder for the per-player folders; a private temporary folder when None.
        port: Host port to use as is (for the start probe); leased when None.
        guarded: Whether the calling process must survive a failed networked start. Then the
            configuration is probed in a child process first (once per process), the port stays
            bound until the host binds it, and the host waits up to a minute for its joiners.
            Pass False where a dead process is restarted anyway (vector-engine workers): a
            start then costs one engine start per player and a hang costs ``config.timeout``.
        console_log: Send the engines' console (network handshake, map loads, fatal errors) to
            ``engine.log`` in the match's folder instead of this process's stdout and stderr,
            and quote its tail in a failed start's error. The in-process :class:`MatchEnv`
            does; vector workers already log their whole output. While the engines start
            (about a second), the caller's own output to file descriptors 1 and 2 goes there too.

    Buffers passed to :meth:`reset` and :meth:`step` hold one row per agent: screens of shape
    ``(num_agents, *options.obs_shape)`` uint8 and, with measurements, ``(num_agents, M)``
    float32. Agent ``i`` is in-game player ``player_i``; player 0 hosts. Scripted players
    (:mod:`sf_envs.match.scripted`) come after the agents; they choose their own actions on
    their own threads and have no rows (a match may have no agent, then the first scripted
    player hosts and the buffers have no rows).

    A fatal engine error during a networked ``init()`` segfaults the calling process, so a
    guarded networked match (several agents) is first started in a child process
    (:func:`~sf_envs.match.probe.probe_start`); a failed start is retried on a fresh port.

    Raises:
        MatchError: when an engine fails to start (the match is cleaned up first).
    """

    #: Game variables in each agent's measurements row, in order.
    MEASUREMENTS = MEASUREMENTS

    def __init__(
        self,
        config: MatchConfig,
        workdir: str | None = None,
        *,
        port: int | None = None,
        guarded: bool = True,
        console_log: bool = False,
    ) -> None:
        self.config = config
        self.num_agents = config.num_agents
        self.agent_names = tuple(f"player_{i}" for i in range(config.num_agents))
        #: In-game names of the engines' players: the agents, then the scripted players.
        self.player_names = config.player_names
        self.bot_names = tuple(b.name for b in config.bots)
        self.workdir = tempfile.mkdtemp(prefix="sf_match_", dir=workdir)
        watchdog.guard(self.workdir)  # its engines run from it: all go when we do
        self._ini_paths: list[str] = []
        self._finalizer = weakref.finalize(self, _release, self._ini_paths, self.workdir)
        self.engine_pids: list[int] = []
        self._port: PortLease | None = None
        self._given_port = port
        self._guarded = guarded
        self._lockstep: LockStep | None = None
        self._closed = False
        self.players: list[MatchPlayer] = []
        n = config.num_agents
        self.rewards = np.zeros(n, dtype=np.float32)
        self.terminated = np.zeros(n, dtype=bool)  # agents respawn: never terminated
        self.truncated = np.zeros(n, dtype=bool)
        self._weights = config.rewards.weights()
        self._frag_baseline: dict[str, float] = {}
        #: Frags since the match start of every player in the game, agents and bots, by name.
        self.scoreboard: dict[str, float] = {}
        try:
            self._start(port, console_log)
        except BaseException:
            self.close()
            raise

    def _start(self, port: int | None, console_log: bool) -> None:
        config = self.config
        self.bots_path = (
            write_bots_file(os.path.join(self.workdir, "bots.cfg"), config.bots, config.map.name)
            if config.bots
            else None
        )
        networked = config.num_engines > 1
        if networked and port is None:
            self._port = self._started_port() if self._guarded else lease_port()
            port = self._port.port
        connect_timeout = config.timeout
        if self._guarded:
            connect_timeout = max(connect_timeout, _GUARDED_CONNECT_TIMEOUT_S)
        # Only networked engines wait for peers; a lone engine runs its bots itself.
        engine = engine_path() if networked else None
        self.players = []
        scripted_levels = scripted_ladder(config.map.name)
        for i in range(config.num_engines):
            folder = os.path.join(self.workdir, f"player_{i}")
            os.makedirs(folder)
            args = game_args(config, i, port, self.bots_path, connect_timeout)
            if i < config.num_agents:
                self.players.append(MatchPlayer(config, i, folder, args, engine))
            else:
                level = scripted_levels[config.scripted[i - config.num_agents].level]
                turn = "TURN_LEFT" in config.buttons
                brain = ScriptedBrain(
                    level,
                    config.options.frame_skip,
                    seed=i,
                    turn=turn,
                    advance="MOVE_FORWARD" in config.buttons,
                    # Searching needs turning; a map without it (multi_duel) has nothing to search.
                    hunter=Hunter(nav_grid(config.map)) if level.hunt and turn else None,
                )
                self.players.append(ScriptedMatchPlayer(config, i, folder, args, brain, engine))
        self._ini_paths[:] = [p.ini_path for p in self.players]
        self._lockstep = LockStep(config.num_engines, config.timeout)
        lease = self._port
        # Every engine creates ``_vizdoom/`` in the process's working directory on init; engines
        # started together in a fresh directory (a new vector worker) race for it, and the loser
        # fails fatally ("Failed to create ./_vizdoom/ directory: File exists") and segfaults.
        os.makedirs("_vizdoom", exist_ok=True)

        launched = [threading.Event() for _ in self.players]

        def init(i: int) -> None:
            if i > 0:
                self._await_launch(i - 1, launched[i - 1])
            if i == 0 and lease is not None:
                lease.unbind()  # as late as possible: the host engine binds it next
            try:
                self.players[i].init()
            finally:
                launched[i].set()

        log = os.path.join(self.workdir, ENGINE_LOG) if console_log else None
        try:
            with console_to(log):
                self._lockstep.run(init, timeout=connect_timeout + 15)
        except MatchError as e:
            tail = log_tail(log) if log else ""
            if not tail:
                raise
            raise MatchError(f"{e}\nlast output of the engines ({log}):\n{tail}") from e
        finally:
            self.engine_pids = _engine_pids(self._ini_paths)
            watchdog.note_engines()

    def _await_launch(self, i: int, finished: threading.Event) -> None:
        """Returns once player ``i``'s engine process runs (or its ``init`` ended).

        ViZDoom forks each engine from a thread of its own, and fork() runs every library's
        pre-fork handlers: two at once can deadlock the second fork forever. Measured with scipy
        installed (numba imports it): scipy's OpenBLAS shuts its thread pool down in its handler,
        and two concurrent shutdowns hang in ``pthread_join`` (gdb), so about one duel start in
        two left an engine unstarted and ended in "network game synchronization aborted" and a
        segfault. Starting the engines one after the other keeps the forks apart, whatever the
        caller imported, for about a millisecond per engine.
        """
        ini = [self._ini_paths[i]]
        deadline = time.monotonic() + _LAUNCH_TIMEOUT_S
        while not _engine_pids(ini) and not finished.is_set():
            if time.monotonic() > deadline:
                raise MatchError(
                    f"player {i}'s engine process did not start within {_LAUNCH_TIMEOUT_S:g} s "
                    "(its fork hung?); the other players' engines were not started"
                )
            time.sleep(_LAUNCH_POLL_S)

    def _started_port(self) -> PortLease:
        """A leased, bound port; the config is first probed there unless already proven."""
        if proven(self.config):
            return lease_port()
        failed: list[PortLease] = []  # held until done, so no retry gets them again
        reasons = []
        try:
            for _ in range(_START_ATTEMPTS):
                lease = lease_port()
                lease.unbind()  # the probe's host binds it
                why = probe_start(self.config, lease.port, self.workdir)
                if why is None and not lease.rebind():
                    why = "another program bound the port right after the probe"
                if why is None:
                    mark_proven(self.config)
                    return lease
                logger.warning(
                    "match failed to start on port %d (%s); retrying on a fresh port",
                    lease.port,
                    why,
                )
                failed.append(lease)
                reasons.append(f"port {lease.port}: {why}")
        finally:
            for lease in failed:
                lease.release()
        raise MatchError(
            f"the {self.config.scenario.name} match failed to start {_START_ATTEMPTS} times, "
            "each on a fresh port:\n  - " + "\n  - ".join(reasons) + "\nCheck that loopback "
            "UDP works and that the machine is not overloaded (timeout= raises the sync limit)"
        )

    @property
    def port(self) -> int | None:
        """The UDP port the host listens on; None for a single agent (no network)."""
        return self._given_port if self._port is None else self._port.port

    @property
    def action_space(self) -> spaces.Discrete | spaces.MultiDiscrete:
        return self.config.action_set.space

    def reset(self, seed: int | None, obs_out: np.ndarray, meas_out: np.ndarray | None) -> None:
        """Starts a new match: every player restarts the map, the host adds the bots.

        A match of one engine (one agent and bots) is reproducible from a seeded reset: ``seed``
        starts a fresh engine (ViZDoom keeps its random state across multiplayer map restarts,
        so a running engine cannot be reseeded), and ``seed=None`` continues that engine's
        random state, so the matches after a seeded reset replay exactly. Networked matches
        (several agents, or scripted players) only pass the seed to ``new_episode`` and the
        scripted players, and reproducibility is not promised for them.
        """
        ls = self._live()
        players = self.players
        game_seed = None if seed is None else int(seed) % (2**31)
        fresh_engine = game_seed is not None and len(players) == 1
        bots = list(self.bot_names)

        def restart(i: int) -> None:
            p = players[i]
            ls.sync()
            if fresh_engine and game_seed is not None:
                p.restart(game_seed)
            p.new_episode(game_seed)
            ls.sync()
            if i == 0:
                p.add_bots(bots)
            ls.sync()
            p.tics(0, _SETTLE_TICS, ls.sync)
            p.start_match(*self._rows(i, obs_out, meas_out))
            if i == 0:
                self._frag_baseline = self._server_frags()

        ls.run(restart)
        if fresh_engine:
            self.engine_pids = _engine_pids(self._ini_paths)
            watchdog.note_engines()
        self.scoreboard = dict.fromkeys(self._frag_baseline, 0.0)
        missing = [b for b in bots if b not in self._frag_baseline]
        if missing:
            raise MatchError(f"the engine did not add bots {missing} (bots file {self.bots_path})")
        self.rewards[:] = 0.0
        self.truncated[:] = False

    def step(
        self, actions: np.ndarray, obs_out: np.ndarray, meas_out: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Advances every player by ``frame_skip`` tics in lock step.

        Args:
            actions: One action per agent, of the action set's space (validated by the caller).

        Returns:
            ``(rewards, terminated, truncated)``, one entry per agent; arrays owned by the core
            and overwritten by the next step. All agents are truncated together at the time limit.
        """
        ls = self._live()
        players = self.players
        skip = self.config.options.frame_skip
        sync = ls.sync if len(players) > 1 else None

        n = self.num_agents

        def play(i: int) -> None:
            p = players[i]
            p.tics(actions[i] if i < n else 0, skip, sync)
            p.finish_step(*self._rows(i, obs_out, meas_out))
            if i == 0:
                # A player missing from the host's state for a moment (the match's last tic,
                # a reconnect) keeps the count last read rather than dropping to zero.
                frags = self._server_frags()
                for name, base in self._frag_baseline.items():
                    if name in frags:
                        self.scoreboard[name] = frags[name] - base

        ls.run(play)
        for i in range(n):
            self.rewards[i] = players[i].events @ self._weights
            self.truncated[i] = players[i].finished
        return self.rewards, self.terminated, self.truncated

    @property
    def finished(self) -> bool:
        """Whether the match reached its time limit (the same tic for every player)."""
        return self.players[0].finished

    def _rows(
        self, i: int, obs_out: np.ndarray, meas_out: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Player ``i``'s output rows; none for a scripted player."""
        if i >= self.num_agents:
            return None, None
        return obs_out[i], None if meas_out is None else meas_out[i]

    def _server_frags(self) -> dict[str, float]:
        """Every player's frag count from the host's scoreboard (the same in every game)."""
        state = cast(vizdoom.DoomGame, self.players[0].game).get_server_state()
        return {
            name: float(frags)
            for name, frags, present in zip(
                state.players_names, state.players_frags, state.players_in_game, strict=True
            )
            if present
        }

    def episode_times(self) -> list[int]:
        """Each player's tic counter: equal for all players after every step (lock step)."""
        players = self.players
        return self._live().run(
            lambda i: cast(vizdoom.DoomGame, players[i].game).get_episode_time()
        )

    def agent_stats(self, i: int) -> dict[str, float]:
        """Player ``i``'s counters since the match start plus its placement (1 is best); ``i``
        counts the agents, then the scripted players."""
        stats = dict(zip(_STAT_NAMES, self.players[i].stats.tolist(), strict=True))
        frags = self.scoreboard.get(self.player_names[i], stats["frags"])
        stats["placement"] = 1 + sum(f > frags for f in self.scoreboard.values())
        return stats

    def result(self) -> dict[str, Any]:
        """The match result: frags of every player (bots included), the winner or a draw."""
        best = max(self.scoreboard.values(), default=0.0)
        leaders = [name for name, f in self.scoreboard.items() if f == best]
        return {
            "frags": dict(self.scoreboard),
            "winner": leaders[0] if len(leaders) == 1 else None,
            "draw": len(leaders) != 1,
        }

    def _live(self) -> LockStep:
        if self._closed or self._lockstep is None:
            raise ClosedEnvError("the match is closed; create a new one")
        return self._lockstep

    def close(self) -> None:
        """Stops the engines (by PID if they linger), frees the port and the folders. Idempotent."""
        if self._closed:
            return
        self._closed = True
        ls = self._lockstep
        if ls is not None:
            if not ls.broken:
                try:
                    ls.run(lambda i: self.players[i].close(), timeout=10)
                except MatchError as exc:
                    logger.warning("closing a broken match: %s", exc)
            # Threads of a broken match may be blocked inside an engine whose peer died; killing
            # the engines first returns them at once instead of after the join timeout.
            _kill_engines(self._ini_paths)
            if not ls.stop(timeout=5):
                logger.warning("match threads did not stop")
        if self._port is not None:
            self._port.release()
        self._finalizer()

    def __enter__(self) -> MatchCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
