"""Tournaments: which games to play (round robin, gauntlet; duel or free-for-all) and playing
them in parallel game processes, each finished game committed to the league at once.

Seats: agents (checkpoints and baselines) take the match's agent seats, bots its bot slots,
scripted players seats of their own (they act inside the match). A duel between two agents is
the ``duel`` match, an agent against a bot ``duel_bots``, any duel with a scripted player
``duel_scripted`` (with or without an agent), all on the requested scenario's map. Two bots meet
in a bot-only game (:data:`BOT_GAME`) on the same map and time limit: the host spectates
(:func:`sf_envs.match.play_bot_game`), so bots are rated among themselves as well as against
agents. Scripted players play duels only.

Free-for-all (the ``deathmatch*`` scenarios) puts every player in every game, in both formats
(a field of bots only is a bot-only game); each game is reduced to pairwise results for the
ratings (:func:`sf_league.ratings.elo.ffa_pairwise`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sf_envs.env import observation_space
from sf_envs.match import MatchConfig, MatchCore, get_match_scenario
from sf_envs.match.botgame import bot_game_config
from sf_envs.match.maps import get_map
from sf_league.store import FailedGame, GameRecord, LeagueStore
from sf_league.tournament.game import AgentSeat, GameJob, play_in_game_process
from sf_league.tournament.game_pool import GamePool, GameProcessPool
from sf_league.tournament.players import Player, check_checkpoint, checkpoint_obs_settings

__all__ = [
    "BOT_GAME",
    "DUEL_SCENARIOS",
    "FFA_SCENARIOS",
    "FORMATS",
    "TournamentConfig",
    "TournamentError",
    "TournamentResult",
    "local_game_pool",
    "plan_games",
    "run_tournament",
]

logger = logging.getLogger(__name__)

DUEL_SCENARIOS = ("duel", "duel_bots")
FFA_SCENARIOS = ("deathmatch", "deathmatch_bots")
FORMATS = ("round-robin", "gauntlet")
BOT_GAME = "bot_game"  # the stored scenario of a bot-only game (spectating host)
_ATTEMPTS = 3  # tries per game before it is reported as failed


class TournamentError(ValueError):
    """The tournament cannot run as asked; the message names the fix."""


@dataclass(frozen=True)
class TournamentConfig:
    """A tournament: who, what, how many.

    Attributes:
        scenario: A match scenario: ``duel``/``duel_bots`` (1 v 1) or ``deathmatch``/
            ``deathmatch_bots`` (free for all).
        map: The map played; None: the scenario's (``multi_duel`` for duels, ``cig_map02``
            for free for all). Bot levels are per map (:func:`sf_envs.match.bot_ladder`).
        format: ``round-robin`` (every pair) or ``gauntlet`` (the first player against each
            of the others).
        games: Games per pairing; a rerun with a larger number appends the difference.
        timelimit: Minutes of game time per game (short games = more games per minute; the
            scenario default when None).
        frame_skip: Tics per agent step; None: the checkpoints' own, else 4.
        obs_size: Observation ``(width, height)``; None: the checkpoints' own, else 64x36.
        grayscale: Gray observations; None: the checkpoints' own, else True.
        action_set: The agents' controls (``discrete`` or ``sample_factory``, see
            :mod:`sf_envs.actions`); None: the checkpoints' own, else ``discrete``.
        workers: Game processes (processes, or Ray actors of one CPU each); None: one per CPU
            core (of the whole cluster on Ray).
        seed: Base seed; each game's seed derives from it and the game's key.
    """

    scenario: str = "duel_bots"
    map: str | None = None
    format: str = "round-robin"
    games: int = 10
    timelimit: float | None = None
    frame_skip: int | None = None
    obs_size: tuple[int, int] | None = None
    grayscale: bool | None = None
    action_set: str | None = None
    workers: int | None = None
    seed: int = 0

    def problems(self) -> list[str]:
        errors = []
        if self.scenario not in DUEL_SCENARIOS + FFA_SCENARIOS:
            errors.append(
                f"--scenario {self.scenario!r}: use one of {', '.join(DUEL_SCENARIOS)} (1 v 1) "
                f"or {', '.join(FFA_SCENARIOS)} (free for all)"
            )
        if self.map is not None:
            try:
                get_map(self.map)
            except ValueError as e:
                errors.append(f"--map: {e}")
        if self.format not in FORMATS:
            errors.append(f"--format {self.format!r}: use {' or '.join(FORMATS)}")
        if not isinstance(self.games, int) or self.games < 1:
            errors.append(f"--games {self.games!r}: play at least 1 game per pairing")
        if self.workers is not None and self.workers < 1:
            errors.append(f"--workers {self.workers}: use at least 1 game process")
        return errors

    @property
    def map_name(self) -> str:
        """The map played: :attr:`map`, else the scenario's."""
        if self.map is not None:
            return self.map
        return get_match_scenario(self.scenario).map


@dataclass
class TournamentResult:
    """What a run did: games planned, already stored, played now, failed (keys, after every
    attempt failed), and how many times a game was played again after a failed attempt."""

    planned: int
    already_stored: int
    played: int
    failed: list[str]
    replayed: int = 0


def _obs_settings(config: TournamentConfig, players: Sequence[Player]) -> dict[str, Any]:
    """Observation settings: explicit ones, else the checkpoints' (which must agree)."""
    trained = {p.name: checkpoint_obs_settings(p) for p in players if p.kind == "checkpoint"}
    settings: dict[str, Any] = {}
    defaults = {"obs_size": (64, 36), "grayscale": True, "frame_skip": 4, "action_set": "discrete"}
    for key, default in defaults.items():
        given = getattr(config, key)
        values = {json.dumps(t[key]) for t in trained.values()}
        if given is None and len(values) > 1:
            raise TournamentError(
                f"the checkpoints were trained with different {key} "
                f"({', '.join(f'{n}: {t[key]}' for n, t in trained.items())}); all agents of a "
                "match share one observation format: compare checkpoints trained alike"
            )
        settings[key] = (
            given if given is not None else (json.loads(values.pop()) if values else default)
        )
        if isinstance(settings[key], list):
            settings[key] = tuple(settings[key])
    return settings


def _match_for(
    config: TournamentConfig, lineup: Sequence[Player], obs: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The sf-envs scenario and ``make_match`` arguments for one lineup."""
    agents = [p for p in lineup if p.is_agent]
    bots = [p for p in lineup if p.kind == "bot"]
    scripted = [p for p in lineup if p.kind == "scripted"]
    duel = config.scenario in DUEL_SCENARIOS
    if scripted:
        scenario = "duel_scripted"
    elif duel:
        scenario = "duel" if len(agents) == 2 else "duel_bots"
    else:
        scenario = "deathmatch" if len(agents) >= 2 else "deathmatch_bots"
    kwargs: dict[str, Any] = {
        "map": config.map_name,
        "num_agents": len(agents),
        "num_bots": len(bots),
        **obs,
    }
    if bots:
        kwargs["bot_skill"] = [b.level for b in bots]
    if scripted:
        kwargs["num_scripted"] = len(scripted)
        kwargs["scripted_skill"] = [p.level for p in scripted]
    if config.timelimit is not None:
        kwargs["timelimit"] = config.timelimit
    return scenario, kwargs


def _seed(base: int, key: str) -> int:
    return (base + int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)) % (2**31)


def _bot_game_jobs(config: TournamentConfig, lineup: Sequence[Player]) -> list[GameJob]:
    """The games of a lineup of bots only: a spectating host, the bots fight each other."""
    map_name = config.map_name
    timelimit = (
        config.timelimit
        if config.timelimit is not None
        else get_match_scenario(config.scenario).timelimit
    )
    levels = cast(list[int], [p.level for p in lineup])  # a bot has a level
    try:
        bot_game_config(map_name, levels, timelimit=timelimit)
    except ValueError as e:
        raise TournamentError(f"lineup {[p.name for p in lineup]}: {e}") from e
    settings = {"scenario": BOT_GAME, "map": map_name, "timelimit": float(timelimit)}
    fingerprint = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
    pairing = "+".join(sorted(p.name for p in lineup))
    jobs = []
    for k in range(config.games):
        key = f"{BOT_GAME}|{fingerprint}|{pairing}|{k}"
        jobs.append(
            GameJob(
                key=key,
                scenario=BOT_GAME,
                match_kwargs={"map": map_name, "bot_levels": levels, "timelimit": timelimit},
                agents=(),
                bots=tuple(p.name for p in lineup),
                seed=_seed(config.seed, key),
                settings=settings,
            )
        )
    return jobs


def plan_games(config: TournamentConfig, players: Sequence[Player]) -> list[GameJob]:
    """Every game of the tournament, with keys stable across reruns.

    Validates the whole tournament first (players, match setups, checkpoint spaces), so a bad
    input fails before any game runs.

    Raises:
        TournamentError: For a bad config, fewer than two players, duplicate names, or a lineup
            the match cannot host.
        PlayerError: For a checkpoint that does not fit the match.
    """
    errors = config.problems()
    names = [p.name for p in players]
    if len(players) < 2:
        errors.append(f"a tournament needs at least two players, got {len(players)}")
    if len(set(names)) != len(names):
        errors.append(f"players are named more than once: {names}; list each once")
    if config.scenario not in DUEL_SCENARIOS and any(p.kind == "scripted" for p in players):
        errors.append(
            "scripted players play duels only; use --scenario duel_bots (or duel) for them"
        )
    if errors:
        raise TournamentError("invalid tournament:\n  - " + "\n  - ".join(errors))
    obs = _obs_settings(config, players)
    duel = config.scenario in DUEL_SCENARIOS
    if duel:
        lineups = (
            [list(pair) for pair in itertools.combinations(players, 2)]
            if config.format == "round-robin"
            else [[players[0], p] for p in players[1:]]
        )
    else:
        lineups = [list(players)]
    jobs: list[GameJob] = []
    checked: set[str] = set()
    for lineup in lineups:
        if all(p.kind == "bot" for p in lineup):
            jobs += _bot_game_jobs(config, lineup)
            continue
        scenario, kwargs = _match_for(config, lineup, obs)
        try:
            match = MatchConfig.create(scenario, **kwargs)
        except ValueError as e:
            raise TournamentError(f"lineup {[p.name for p in lineup]}: {e}") from e
        obs_space = observation_space(match.options, len(MatchCore.MEASUREMENTS))
        act_space = match.action_set.space
        for p in lineup:
            if p.kind == "checkpoint" and p.name not in checked:
                check_checkpoint(p, obs_space, act_space)
                checked.add(p.name)
        levels = ("bot_skill", "scripted_skill")  # who plays: in the pairing, not the settings
        settings = {"scenario": scenario, **{k: v for k, v in kwargs.items() if k not in levels}}
        settings["timelimit"] = match.timelimit
        fingerprint = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
        pairing = "+".join(sorted(p.name for p in lineup))
        for k in range(config.games):
            agents = [p for p in lineup if p.is_agent]
            if duel and len(agents) == 2 and k % 2:
                agents.reverse()  # alternate who hosts (player_0)
            bots = [p for p in lineup if p.kind == "bot"]
            scripted = [p for p in lineup if p.kind == "scripted"]
            if len(scripted) == 2 and k % 2:
                scripted.reverse()  # alternate who hosts
            match_kwargs = dict(kwargs)
            if scripted:
                match_kwargs["scripted_skill"] = [p.level for p in scripted]
            key = f"{scenario}|{fingerprint}|{pairing}|{k}"
            jobs.append(
                GameJob(
                    key=key,
                    scenario=scenario,
                    match_kwargs=match_kwargs,
                    agents=tuple(_seat(p) for p in agents),
                    bots=tuple(b.name for b in bots),
                    scripted=tuple(p.name for p in scripted),
                    seed=_seed(config.seed, key),
                    settings=settings,
                )
            )
    return jobs


def _seat(p: Player) -> AgentSeat:
    if p.kind == "checkpoint":
        return AgentSeat(p.name, "checkpoint", str(p.checkpoint), str(p.run_dir))
    # A baseline's fingerprint is its spec (random, noop), whatever NAME= it plays under.
    return AgentSeat(p.name, p.fingerprint if p.kind == "baseline" else p.kind)


def local_game_pool(workers: int | None, games: int) -> GameProcessPool:
    """Game processes on this machine: ``workers`` (None: one per CPU core), never more than
    the ``games`` to play."""
    return GameProcessPool(min(workers or os.cpu_count() or 1, games), play_in_game_process)


def run_tournament(
    config: TournamentConfig,
    players: Sequence[Player],
    store: LeagueStore,
    on_game: Callable[[GameRecord | None, int, int], None] | None = None,
    game_pool: Callable[[int | None, int], GamePool] | None = None,
) -> TournamentResult:
    """Plays every game of the tournament not yet in ``store``, in parallel game processes.

    Each finished game is committed in its own transaction as it arrives, so an interruption
    (Ctrl-C, SIGKILL, power loss) keeps every finished game, and rerunning the same command
    plays only the missing ones. A failed attempt (an engine crash or hang, an exception, a
    game process that died) is logged when it happens and charged to its game alone; the game
    is played again up to 3 attempts in all, then stored as failed with the reason
    (:meth:`~sf_league.store.LeagueStore.failed_games`; not rated, retried by a rerun) while the
    rest of the tournament goes on.

    Args:
        config: The tournament.
        players: Its players (parsed with :func:`~sf_league.tournament.players.parse_player`).
        store: The league; players are registered in it first.
        on_game: Called as ``on_game(record_or_None, done, total)`` after each game
            (None for a failed one), e.g. to advance a progress bar.
        game_pool: Makes the game processes as ``game_pool(config.workers, games to play)``;
            None: :func:`local_game_pool` (:func:`sf_league.tournament.ray_games.ray_game_pool` plays over a
            Ray cluster). Whoever plays, only this process writes ``store``.
    """
    jobs = plan_games(config, players)
    store.add_players([p.record() for p in players])
    stored = store.game_keys()
    pending = [j for j in jobs if j.key not in stored]
    result = TournamentResult(len(jobs), len(jobs) - len(pending), 0, [])
    if not pending:
        return result
    attempts = dict.fromkeys((j.key for j in pending), 0)
    done = result.already_stored
    # Games of one match setup back to back, so game processes mostly reset the match they have open
    # (game process.MatchCache) instead of starting a new one.
    queue = sorted(pending, key=lambda j: json.dumps([j.scenario, j.match_kwargs], sort_keys=True))
    with (game_pool or local_game_pool)(config.workers, len(pending)) as pool:
        for job in queue:
            pool.submit(job)
        while pool.unfinished:
            outcome = pool.next_outcome()
            job = outcome.job
            if outcome.record is not None:
                store.record_game(outcome.record)
                result.played += 1
                done += 1
                if on_game:
                    on_game(outcome.record, done, len(jobs))
                continue
            attempts[job.key] += 1
            if attempts[job.key] < _ATTEMPTS:
                logger.warning(
                    "game %s failed (attempt %d of %d), playing it again: %s",
                    job.key,
                    attempts[job.key],
                    _ATTEMPTS,
                    outcome.error,
                )
                result.replayed += 1
                pool.submit(job)
                continue
            logger.error(
                "game %s failed %d times, giving up: %s", job.key, _ATTEMPTS, outcome.error
            )
            store.record_failure(
                FailedGame(
                    job.key,
                    job.scenario,
                    tuple(s.player for s in job.agents) + job.bots,
                    job.settings,
                    _ATTEMPTS,
                    str(outcome.error),
                )
            )
            result.failed.append(job.key)
            done += 1
            if on_game:
                on_game(None, done, len(jobs))
    return result
