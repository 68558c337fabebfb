"""Which stored games may be rated together: those played under the same game settings.

An Elo difference is only meaningful for one game: the same player is stronger in a long game
than a short one, on one map than another, at one frame skip than another, in a duel than in a
free for all. So the league's games are split into groups of equal settings (:class:`GameGroup`)
and each group is rated on its own; nothing is ever fitted across groups.

A duel tournament plays ``duel`` (two agents), ``duel_bots`` (an agent and a bot) and bot-only
games, all of them one against one on one map: they are one group, ``duel``; likewise
``deathmatch``/``deathmatch_bots`` are ``deathmatch``. A bot-only game has no frame skip (no
agent steps; the bots play the same game whatever the agents' frame skip), so it counts in
every group of its kind, map and time limit (and forms a group of its own where there is none).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sf_league.store import GameRecord

__all__ = ["GameGroup", "GroupSelection", "group_games", "group_of"]

_BOT_GAME = (
    "bot_game"  # sf_league.tournament.schedule.BOT_GAME (the tournament imports this module)
)


@dataclass(frozen=True)
class GameGroup:
    """The settings that make games comparable.

    Attributes:
        scenario: ``duel`` (one against one) or ``deathmatch`` (free for all); the stored
            scenario for a game of another kind.
        map: Map played; None where the game did not record it.
        timelimit: Minutes of game time; None where not recorded.
        frame_skip: Tics per agent step; None for bot-only games (and where not recorded).
    """

    scenario: str
    map: str | None
    timelimit: float | None
    frame_skip: int | None

    def label(self) -> str:
        """The settings in words, e.g. ``duel on multi_duel, 0.25-minute games, frame skip 4``."""
        where = f" on {self.map}" if self.map else " (map not recorded)"
        length = (
            f", {self.timelimit:g}-minute games"
            if self.timelimit is not None
            else ", game length not recorded"
        )
        skip = f", frame skip {self.frame_skip}" if self.frame_skip is not None else ", bots only"
        return f"{self.scenario}{where}{length}{skip}"

    def flags(self) -> str:
        """The ``ratings``/``plot`` options that select this group alone."""
        parts = [f"--scenario {self.scenario}"]
        if self.map is not None:
            parts.append(f"--map {self.map}")
        if self.timelimit is not None:
            parts.append(f"--timelimit {self.timelimit:g}")
        if self.frame_skip is not None:
            parts.append(f"--frame-skip {self.frame_skip}")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "map": self.map,
            "timelimit": self.timelimit,
            "frame_skip": self.frame_skip,
        }


def _kind(scenario: str, seats: int) -> str:
    if scenario.startswith("duel"):
        return "duel"
    if scenario.startswith("deathmatch"):
        return "deathmatch"
    if scenario == _BOT_GAME:
        return "duel" if seats == 2 else "deathmatch"
    return scenario


def group_of(scenario: str, settings: dict[str, Any], seats: int) -> GameGroup:
    """The group of a game (played or failed) from its stored scenario, settings and number of
    players."""
    timelimit = settings.get("timelimit")
    frame_skip = None if scenario == _BOT_GAME else settings.get("frame_skip")
    return GameGroup(
        _kind(scenario, seats),
        settings.get("map"),
        None if timelimit is None else float(timelimit),
        None if frame_skip is None else int(frame_skip),
    )


@dataclass(frozen=True)
class GroupSelection:
    """Which groups to rate (a field left None accepts any value); ``duel_bots`` and
    ``deathmatch_bots`` select ``duel`` and ``deathmatch``."""

    scenario: str | None = None
    map: str | None = None
    timelimit: float | None = None
    frame_skip: int | None = None

    def accepts(self, group: GameGroup) -> bool:
        scenario = None if self.scenario is None else self.scenario.removesuffix("_bots")
        return (
            (scenario is None or group.scenario == scenario)
            and (self.map is None or group.map == self.map)
            and (self.timelimit is None or group.timelimit == float(self.timelimit))
            and (self.frame_skip is None or group.frame_skip == self.frame_skip)
        )


def group_games(games: Iterable[GameRecord]) -> dict[GameGroup, list[GameRecord]]:
    """The games of each group, in stored order, groups sorted by their settings (see the
    module docstring for where bot-only games count)."""
    indexed: dict[GameGroup, list[tuple[int, GameRecord]]] = {}
    bot_games: list[tuple[GameGroup, int, GameRecord]] = []
    for k, game in enumerate(games):
        group = group_of(game.scenario, game.settings, len(game.seats))
        if game.scenario == _BOT_GAME:
            bot_games.append((group, k, game))
        else:
            indexed.setdefault(group, []).append((k, game))
    agent_groups = list(indexed)
    for bots_group, k, game in bot_games:
        same_game = [
            g
            for g in agent_groups
            if g.frame_skip is not None
            and (g.scenario, g.map, g.timelimit)
            == (bots_group.scenario, bots_group.map, bots_group.timelimit)
        ]
        for home in same_game or [bots_group]:
            indexed.setdefault(home, []).append((k, game))
    return {
        group: [game for _, game in sorted(indexed[group], key=lambda pair: pair[0])]
        for group in sorted(indexed, key=_sort_key)
    }


def _sort_key(group: GameGroup) -> tuple[Any, ...]:
    return tuple((value is None, value) for value in vars(group).values())
