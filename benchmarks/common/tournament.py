"""The benchmark tournament's flags, its duel_bots round robin and its ladder of players (the
checkpoint, the baselines, every bot level of the map), shared by ``league_tournament.py`` and
``league_ray.py``."""

from __future__ import annotations

import argparse

from sf_envs.match import bot_ladder
from sf_league.tournament.schedule import TournamentConfig


def add_tournament_arguments(parser: argparse.ArgumentParser, timelimit: float) -> None:
    """The flags of a benchmark tournament: players, map, games, game length, game processes."""
    parser.add_argument("--checkpoint", help="an sf-train run folder or checkpoint to include")
    parser.add_argument("--map", default="multi_duel", help="map of the duels")
    parser.add_argument("--games", type=int, default=4, help="games per pairing")
    parser.add_argument("--timelimit", type=float, default=timelimit, help="minutes per game")
    parser.add_argument("--workers", type=int, help="game processes (default: CPU cores)")


def tournament_config(args: argparse.Namespace) -> TournamentConfig:
    """The duel_bots round robin that :func:`add_tournament_arguments`' flags describe."""
    return TournamentConfig(
        scenario="duel_bots",
        map=args.map,
        games=args.games,
        timelimit=args.timelimit,
        workers=args.workers,
    )


def ladder_players(checkpoint: str | None, map_name: str) -> list[str]:
    """The checkpoint (as ``agent``), the baselines and every bot level of the map."""
    texts = ([f"agent={checkpoint}"] if checkpoint else []) + ["random", "noop"]
    return texts + [f"bot:{level}" for level in sorted(bot_ladder(map_name))]
