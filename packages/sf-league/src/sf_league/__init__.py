"""sf_league: tournaments, Elo ratings and populations trained by self-play and PBT.

- :mod:`sf_league.tournament`: who plays whom and playing the games in game processes (here
  or on a Ray cluster).
- :mod:`sf_league.ratings`: Elo fits over stored games, standings, rating groups and plots.
- :mod:`sf_league.population`: populations trained in sf-train by self-play, judged by the
  league and improved by PBT; gauntlets, frozen opponents and Ray shards.
- :mod:`sf_league.store`: the league's one SQLite file.
- :mod:`sf_league.cli`: the ``sf-league`` command.

What users need is importable from here (``from sf_league import LeagueStore, run_tournament``);
the names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sf_envs.exports import lazy_exports

if TYPE_CHECKING:
    from sf_league.population.pbt import PBTConfig
    from sf_league.population.training import PopulationConfig, PopulationTrainer
    from sf_league.ratings.elo import RatingFit, fit_ratings
    from sf_league.store import LeagueStore
    from sf_league.tournament.players import parse_player
    from sf_league.tournament.schedule import TournamentConfig, TournamentResult, run_tournament

_EXPORTS = {
    "PBTConfig": "sf_league.population.pbt",
    "PopulationConfig": "sf_league.population.training",
    "PopulationTrainer": "sf_league.population.training",
    "RatingFit": "sf_league.ratings.elo",
    "fit_ratings": "sf_league.ratings.elo",
    "LeagueStore": "sf_league.store",
    "parse_player": "sf_league.tournament.players",
    "TournamentConfig": "sf_league.tournament.schedule",
    "TournamentResult": "sf_league.tournament.schedule",
    "run_tournament": "sf_league.tournament.schedule",
}

__all__ = [
    "LeagueStore",
    "PBTConfig",
    "PopulationConfig",
    "PopulationTrainer",
    "RatingFit",
    "TournamentConfig",
    "TournamentResult",
    "fit_ratings",
    "parse_player",
    "run_tournament",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
