"""Deathmatch maps shipped in the ``vizdoom`` wheel, with the limits measured on them.

Each :class:`MatchMap` encodes what was measured (see ``VIZDOOM_FACTS.md``): how many players a
map holds before the engine crashes, and the console settings it needs. Maps that cannot host a
fair deathmatch are listed in :data:`UNSUPPORTED_MAPS` with the reason, so asking for one fails
with an explanation up front instead of a segfault inside ``DoomGame.init()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import vizdoom

__all__ = ["MAPS", "UNSUPPORTED_MAPS", "MatchMap", "get_map", "map_names"]

_PACKAGE_DIR = os.path.dirname(vizdoom.__file__)


@dataclass(frozen=True)
class MatchMap:
    """One deathmatch map and its measured limits.

    Attributes:
        name: Short name used by ``make_match(map=...)``.
        iwad: Game data file inside the vizdoom package (``freedoom2.wad``).
        wad: Extra map file inside ``vizdoom.scenarios_path``, or None for a map of the iwad.
        doom_map: Map lump name, e.g. ``"map01"``.
        max_players: Most players (agents plus bots) measured to run without an engine crash.
        weapons: ``"hitscan"`` or ``"rockets"``: which bot parameters can matter (``aiming``
            only affects hitscan weapons).
        game_args: Extra console arguments the map needs (e.g. ``+sv_noexit 1``).
        description: One line for listings.
    """

    name: str
    iwad: str
    wad: str | None
    doom_map: str
    max_players: int
    weapons: str
    description: str
    game_args: str = ""

    @property
    def iwad_path(self) -> str:
        return os.path.join(_PACKAGE_DIR, self.iwad)

    @property
    def wad_path(self) -> str | None:
        return None if self.wad is None else os.path.join(vizdoom.scenarios_path, self.wad)


MAPS: dict[str, MatchMap] = {
    m.name: m
    for m in (
        MatchMap(
            "cig_map01",
            "freedoom2.wad",
            "cig.wad",
            "map01",
            max_players=8,
            weapons="rockets",
            description="CIG 2016 track 1 arena: rocket launchers only.",
        ),
        MatchMap(
            "cig_map02",
            "freedoom2.wad",
            "cig.wad",
            "map02",
            max_players=8,
            weapons="hitscan",
            description="CIG 2016 track 2 arena: full weapon set, mostly hitscan.",
        ),
        MatchMap(
            "multi_duel",
            "freedoom2.wad",
            "multi_duel.wad",
            "map01",
            # Two deathmatch starts: 3 players ran, 5 crashed the engine.
            max_players=3,
            weapons="rockets",
            description="Small duel room with two deathmatch starts and rockets.",
        ),
        MatchMap(
            "freedoom2_map01",
            "freedoom2.wad",
            None,
            "map01",
            max_players=8,
            weapons="hitscan",
            # Without it the first player to reach the exit ends the match for everyone.
            game_args="+sv_noexit 1",
            description="Freedoom 2 MAP01, a campaign level used as an open arena.",
        ),
    )
}

#: Maps that ship in the wheel but cannot host a match, with the reason and what to use instead.
UNSUPPORTED_MAPS: dict[str, str] = {
    "multi_deathmatch": (
        "multi_deathmatch.wad (multi.cfg) ends the map when player 0 or 1 dies (ACS script)"
    ),
    "deathmatch": (
        "deathmatch.wad has no deathmatch starts; with -deathmatch the engine aborts and "
        "segfaults Python"
    ),
}


def map_names() -> list[str]:
    return sorted(MAPS)


def get_map(name: str) -> MatchMap:
    """Returns the map called ``name``; a ValueError explains unsupported and unknown names."""
    if name in MAPS:
        return MAPS[name]
    if name in UNSUPPORTED_MAPS:
        raise ValueError(
            f"map {name!r} cannot host a match: {UNSUPPORTED_MAPS[name]}; "
            f"use one of {', '.join(map_names())}"
        )
    raise ValueError(f"unknown map {name!r}; known maps: {', '.join(map_names())}")
