"""Playing one tournament game, start to finish, inside a game-runner process.

Why whole games in worker processes rather than the vector engine: a tournament's matches are
heterogeneous (each seat may be a different checkpoint, a baseline or nobody when bots fill
in), games are short, and only a result needs to come back. A worker that owns a whole game
loads its players' policies once, steps the PettingZoo match with no inter-process traffic per
step, and returns a :class:`~sf_league.store.GameRecord`. A fatal engine error (ViZDoom
segfaults Python in some ``init()`` failures) kills only that worker; the tournament restarts
the pool and retries the game.
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sf_league.store import GameRecord, Seat

__all__ = ["AgentSeat", "GameJob", "play_game", "worker_init"]

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
    """One scheduled game; picklable, sent to a runner process.

    Attributes:
        key: The game's unique key in the league (a rerun skips stored keys).
        scenario: The sf-envs match scenario to create.
        match_kwargs: Keyword arguments of ``make_match`` (map, bots, time limit, options).
        agents: The agent seats, ``player_0`` first.
        bots: League names of the bots, in the match's bot order.
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


def _watch_parent(parent: int) -> None:
    """Ends this runner when the tournament process is gone (e.g. SIGKILLed).

    Orphaned ViZDoom engines ignore SIGTERM and spin at 100% CPU, so the engines (this
    process's children) are SIGKILLed before exiting.
    """
    while os.getppid() == parent:
        time.sleep(0.5)
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[1] == me:
                    os.kill(int(entry), signal.SIGKILL)
        except (OSError, IndexError):
            continue
    os._exit(1)


def worker_init(torch_threads: int = 1) -> None:
    """Prepares a runner process: its own working folder (ViZDoom writes ``_vizdoom/`` into
    the cwd), one torch thread (the runners already fill the cores), a parent watchdog."""
    os.chdir(tempfile.mkdtemp(prefix="sf_league_runner_"))
    # The engines print their network handshake, which would garble the progress bar; errors
    # reach the tournament as exceptions, not as text.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the tournament's to handle
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    import torch

    torch.set_num_threads(torch_threads)


_POLICIES: dict[str, Any] = {}  # checkpoint path -> network, loaded once per runner


class _Actor:
    """Picks the action of one agent seat from its observation."""

    def __init__(self, seat: AgentSeat, env: Any, agent: str, seed: int) -> None:
        self.kind = seat.kind
        self.n = env.action_space(agent).n
        self.rng = np.random.default_rng(seed)
        if seat.kind == "checkpoint":
            import torch

            from sf_train.evaluate import load_policy

            if seat.checkpoint not in _POLICIES:
                _POLICIES[seat.checkpoint] = load_policy(
                    seat.run_dir,
                    env.observation_space(agent),
                    env.action_space(agent),
                    seat.checkpoint,
                )[0]
            self.model = _POLICIES[seat.checkpoint]
            self.state = self.model.initial_state(1, "cpu")
            self.generator = torch.Generator().manual_seed(seed)

    def act(self, obs: Any) -> int:
        if self.kind == "noop":
            return 0
        if self.kind == "random":
            return int(self.rng.integers(self.n))
        import torch

        with torch.no_grad():
            if isinstance(obs, dict):
                x = {k: torch.as_tensor(v)[None] for k, v in obs.items()}
            else:
                x = torch.as_tensor(obs)[None]
            out = self.model(x, self.state)
            self.state = out.rnn_state
            return int(self.model.action_dist.sample(out.logits, self.generator)[0])


def play_game(job: GameJob, workdir: str | None = None) -> GameRecord:
    """Plays ``job`` to the time limit and returns its record.

    Raises:
        sf_envs.match.MatchError: If an engine crashes or hangs (the caller may retry).
    """
    from sf_envs.match import make_match

    start = time.perf_counter()
    env = make_match(job.scenario, workdir=workdir, **job.match_kwargs)
    try:
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
    finally:
        env.close()
    result = next(iter(infos.values()))["match"]
    frags = result["frags"]
    seats = [
        Seat(seat.player, float(frags[agent]), float(infos[agent]["deaths"]))
        for agent, seat in zip(env.possible_agents, job.agents, strict=True)
    ]
    seats += [
        Seat(name, float(frags[bot["name"]]))
        for name, bot in zip(job.bots, result["bots"], strict=True)
    ]
    duration = time.perf_counter() - start
    logger.debug("game %s: %s in %.1f s", job.key, seats, duration)
    return GameRecord(job.key, job.scenario, tuple(seats), job.settings, job.seed, steps, duration)


def play_in_runner(job: GameJob) -> GameRecord:
    """:func:`play_game` in a runner process, with engine folders under its private cwd."""
    return play_game(job, workdir=str(Path.cwd()))
