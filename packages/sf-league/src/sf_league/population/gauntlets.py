"""Gauntlets of a population: every member's gauntlet checkpoint against fixed opponents.

Training matches only say how members fare against each other; a gauntlet puts each member's
latest checkpoint, as a gauntlet checkpoint (a league player ``RUN/pN@FRAMES`` of its own), into
an ordinary tournament of the league against baselines, bots and scripted players, so ratings
over training time can be drawn (``sf-league plot --over-time``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sf_league.store import LeagueStore

__all__ = ["GauntletConfig", "play_gauntlet"]

log = logging.getLogger(__name__)


@dataclass
class GauntletConfig:
    """When and against whom members play their gauntlets.

    Attributes:
        every: Env frames (all members together) between gauntlets; 0: none.
        players: The fixed opponents (``bot:N``, ``scripted:N``, ``random``, ``noop``).
        games: Games of each member against each opponent per gauntlet.
        workers: Game processes of a gauntlet (default: CPU cores).
    """

    every: int = 0
    players: tuple[str, ...] = ("random", "noop", "bot:1")
    games: int = 2
    workers: int | None = None


def play_gauntlet(
    cfg: GauntletConfig,
    checkpoints: dict[str, Path],
    store: LeagueStore,
    map_name: str,
    timelimit: float,
) -> None:
    """Plays each ``name -> checkpoint`` of ``checkpoints`` against ``cfg.players`` on
    ``map_name``, storing the games in ``store``."""
    from sf_league.tournament.players import parse_player
    from sf_league.tournament.schedule import TournamentConfig, run_tournament

    config = TournamentConfig(
        scenario="duel_bots",
        map=map_name,
        format="gauntlet",
        games=cfg.games,
        timelimit=timelimit,
        workers=cfg.workers,
    )
    opponents = [parse_player(text, config.map_name) for text in cfg.players]
    for name, checkpoint in checkpoints.items():
        player = parse_player(f"{name}={checkpoint}", config.map_name)
        result = run_tournament(config, [player, *opponents], store)
        log.info(
            "gauntlet of %s: %d games played, %d failed", name, result.played, len(result.failed)
        )
